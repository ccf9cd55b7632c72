"""A batch's pace: lines spaced to `max_share` of the key's rpm and tpm (tokens counted from
the line's prompt and output cap), pushed back after the key's limiter refused one; a key with
neither limit is not paced."""

from __future__ import annotations

import asyncio
import time

from unigate.auth.principal import Principal
from unigate.batches.pacing import Pacer


def _key(rpm: int | None = None, tpm: int | None = None) -> Principal:
    return Principal("key_1", "n", "h", (), (), rpm, None, None, None, 0.0, "whsec_x", tpm=tpm)


def _timed(pacer: Pacer, bodies: list[dict[str, object]]) -> float:
    async def run() -> float:
        started = time.monotonic()
        for body in bodies:
            await pacer.wait(body)
        return time.monotonic() - started

    return asyncio.run(run())


def test_requests_are_spaced_to_the_share_of_rpm() -> None:
    pacer = Pacer(_key(rpm=6000), 0.5)  # 3000 a minute: one every 20 ms
    assert pacer.per_request == 0.02
    took = _timed(pacer, [{}] * 11)
    assert 0.19 <= took < 0.5


def test_tokens_are_spaced_to_the_share_of_tpm() -> None:
    pacer = Pacer(_key(tpm=60_000), 0.5)  # 500 tokens a second
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 20}
    took = _timed(pacer, [body] * 6)
    assert took >= 5 * 20 / 500


def test_a_refusal_pushes_the_next_line_back_and_no_limit_means_no_pace() -> None:
    pacer = Pacer(_key(rpm=600_000), 1.0)
    pacer.back_off(0.2)
    assert _timed(pacer, [{}]) >= 0.19
    free = Pacer(_key(), 0.5)
    assert not free.paced and _timed(free, [{}] * 1000) < 0.1


def test_a_models_own_limits_pace_its_lines_and_no_other_models() -> None:
    # A model's rpm is an upstream's quota shared by every key: a batch takes `share` of it too,
    # even on a key without limits of its own.
    limits = {"quota-model": (6000, None)}  # 3000 a minute at half: one line every 20 ms
    pacer = Pacer(_key(), 0.5, lambda model: limits.get(model, (None, None)))
    took = _timed(pacer, [{"model": "quota-model"}] * 11)
    assert 0.19 <= took < 0.5
    assert _timed(pacer, [{"model": "free-model"}] * 1000) < 0.1  # another model is not held back


def test_a_line_waits_for_the_later_of_its_keys_turn_and_its_models() -> None:
    pacer = Pacer(_key(rpm=60_000), 0.5, lambda model: (600, None))  # model: one line every 0.2 s
    took = _timed(pacer, [{"model": "m"}] * 3)
    assert took >= 0.39  # the model's pace, though the key's alone would allow 2,000 a second
