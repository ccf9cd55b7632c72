"""Key format, principal permissions, the per-key rate limiter."""

from __future__ import annotations

import pytest

from unigate.auth.keys import KEY_RE, generate_key, hash_key, is_well_formed
from unigate.auth.principal import Principal
from unigate.errors import RateLimited
from unigate.limits.rate import RateLimiter


def test_keys_are_unique_and_checksummed() -> None:
    keys = {generate_key() for _ in range(200)}
    assert len(keys) == 200
    for key in keys:
        assert KEY_RE.match(key) and is_well_formed(key)
        typo = key[:10] + ("A" if key[10] != "A" else "B") + key[11:]
        assert not is_well_formed(typo)
    assert len(hash_key(next(iter(keys)))) == 64


def _principal(models: tuple[str, ...] = (), families: tuple[str, ...] = ()) -> Principal:
    return Principal("key_1", "n", "h", models, families, None, None, None, None, 0.0, "whsec_x")


def test_model_globs_and_families() -> None:
    p = _principal(("gpt-4o*", "sandbox-chat"), ("text",))
    assert p.may_use_model("gpt-4o-mini") and p.may_use_model("sandbox-chat")
    assert not p.may_use_model("gpt-3.5") and not p.may_use_model("sandbox-chat-2")
    assert p.may_use_family("text") and not p.may_use_family("music")
    unrestricted = _principal()
    assert unrestricted.may_use_model("anything") and unrestricted.may_use_family("video")


def test_rate_limiter_sliding_window() -> None:
    rl = RateLimiter()
    t = 6000.0  # start of a window
    for _ in range(10):
        rl.hit("k", 10, now=t)
    with pytest.raises(RateLimited) as info:
        rl.hit("k", 10, now=t + 1)
    assert int(info.value.headers["retry-after"]) >= 1
    # Halfway through the next window half of the previous window still counts.
    for _ in range(5):
        rl.hit("k", 10, now=t + 90)
    with pytest.raises(RateLimited):
        rl.hit("k", 10, now=t + 90)
    # Two windows later everything is forgotten; other keys are independent.
    rl.hit("k", 10, now=t + 200)
    rl.hit("other", 1, now=t + 1)
