"""Key format, principal permissions, key specs (limits: tests/unit/test_limits.py)."""

from __future__ import annotations

import pytest

from unigate.auth.keys import KEY_RE, generate_key, hash_key, is_well_formed
from unigate.auth.principal import Principal


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


BAD_KEY_SPECS = [
    ({"expires_at": True}, "expires_at"),
    ({"expires_at": False}, "expires_at"),
    ({"expires_at": 1e19}, "expires_at"),
    ({"expires_at": "1" * 5000}, "expires_at"),
    ({"expires_at": 10**400}, "expires_at"),
    ({"expires_at": 1_000_000}, "expires_at"),  # 1970: in the past
    ({"expires_at": "2001-01-01"}, "expires_at"),
    ({"expires_at": "10000-01-01"}, "expires_at"),
    ({"expires_at": "0001-01-01T00:00:00+05:00"}, "expires_at"),
    ({"expires_at": "soon"}, "expires_at"),
    ({"expires_at": [2030]}, "expires_at"),
    ({"rpm": True}, "rpm"),
    ({"rpm": 1.5}, "rpm"),
    ({"rpm": "10"}, "rpm"),
    ({"rpm": 0}, "rpm"),
    ({"rpm": 10**12}, "rpm"),
    ({"budget": True}, "budget"),
    ({"budget": -1}, "budget"),
    ({"budget": 1e300}, "budget"),
    ({"budget": float("inf")}, "budget"),
    ({"budget": float("nan")}, "budget"),
    ({"budget": "5"}, "budget"),
    ({"name": "a\x1b[2Jb"}, "name"),
    ({"name": "line\nbreak"}, "name"),
    ({"name": "evil\u202eeulav"}, "name"),
    ({"name": "   "}, "name"),
    ({"name": 5}, "name"),
    ({"name": "n" * 201}, "name"),
    ({"models": ["x" * 201]}, "models"),
    ({"models": ["ok"] * 201}, "models"),
    ({"models": ["gpt-\x00*"]}, "models"),
    ({"models": [True]}, "models"),
    ({"families": ["text"] * 51}, "families"),
]


@pytest.mark.parametrize(("change", "field"), BAD_KEY_SPECS)
def test_key_spec_refuses_bad_values_naming_the_field(change: dict[str, object], field: str) -> None:
    from pydantic import ValidationError

    from unigate.api.admin.key_spec import KeyCreate, validation_message

    with pytest.raises(ValidationError) as caught:
        KeyCreate.model_validate({"name": "k", **change})
    message, param = validation_message(caught.value)
    assert param == field and message.startswith(field), message


def test_key_spec_accepts_and_normalises_good_values() -> None:
    import datetime as dt

    from unigate.api.admin.key_spec import KeyCreate

    future = dt.datetime(2031, 5, 6, tzinfo=dt.UTC).timestamp()
    for given in ("2031-05-06", "2031-05-06T00:00:00Z", "2031-05-06T02:00:00+02:00", future, int(future)):
        spec = KeyCreate.model_validate({"name": "k", "expires_at": given})
        assert spec.expires_at == future, given
    assert KeyCreate.model_validate({"name": "k", "expires_at": str(int(future))}).expires_at == future
    spec = KeyCreate.model_validate(
        {"name": "Ünïcode ✓", "models": ["gpt-*"], "families": ["text"], "rpm": 60, "budget": 2}
    )
    assert spec.budget == 2.0 and isinstance(spec.budget, float) and spec.rpm == 60
    assert KeyCreate.model_validate({"name": "k", "budget": 0}).budget == 0.0
