"""Readiness probes stay bounded when the database hangs (observability/readiness.py): a probe answers 503
within PROBE_SECONDS, concurrent probes share the one check in flight instead of piling up, and
a check that never ends is cut off on its own."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from unigate.observability import readiness
from unigate.observability.readiness import PROBE_SECONDS, Readiness
from unigate.store.aio import AsyncEngine


class HangingEngine:
    """An engine whose connections never come (a database that accepts and never answers)."""

    def __init__(self) -> None:
        self.attempts = 0
        self.cancelled = 0

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[Any]:
        self.attempts += 1
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        yield None  # pragma: no cover - never reached


def test_a_hanging_database_is_unready_within_the_bound_without_piling_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(readiness, "CHECK_SECONDS", 1.5)
    engine = HangingEngine()

    async def run() -> None:
        ready = Readiness(cast(AsyncEngine, engine), None)
        started = time.monotonic()
        answers = await asyncio.gather(*(ready.report() for _ in range(50)))
        took = time.monotonic() - started
        assert took < PROBE_SECONDS + 0.3
        assert {status for status, _ in answers} == {503}
        assert answers[0][1] == {
            "status": "unavailable",
            "database": "unreachable",
            "redis": "not configured",
        }
        assert engine.attempts == 1  # fifty probes, one connection attempt
        await asyncio.sleep(1.0)  # the check is cut off at CHECK_SECONDS, then a new one may start
        assert engine.cancelled == 1
        status, _ = await ready.report()
        assert status == 503 and engine.attempts == 2

    asyncio.run(run())
