"""Periodic loops stop cooperatively: a step in progress finishes; only an overrunning step
is cancelled."""

from __future__ import annotations

import asyncio

from unigate.background import Periodic


def test_stop_waits_for_the_step_in_progress() -> None:
    events: list[str] = []

    async def step() -> float:
        events.append("start")
        await asyncio.sleep(0.3)  # e.g. a database transaction
        events.append("end")
        return 0.01

    async def run() -> None:
        loop = Periodic("t", step, 0.01)
        loop.start()
        await asyncio.sleep(0.1)
        await loop.stop()

    asyncio.run(run())
    assert events == ["start", "end"], "the step was completed, not cancelled, and no new one began"


def test_failing_steps_do_not_end_the_loop_and_overruns_are_cancelled() -> None:
    calls = 0

    async def flaky() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("boom")

    async def stuck() -> None:
        await asyncio.sleep(60)

    async def run() -> None:
        loop = Periodic("flaky", flaky, 0.01)
        loop.start()
        await asyncio.sleep(0.2)
        await loop.stop()
        hung = Periodic("stuck", stuck, 0.01, grace=0.2)
        hung.start()
        await asyncio.sleep(0.05)
        await asyncio.wait_for(hung.stop(), 2)

    asyncio.run(run())
    assert calls >= 3
