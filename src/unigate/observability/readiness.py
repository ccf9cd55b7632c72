"""Readiness (`GET /readyz`): is the database reachable, is Redis reachable — each answered
within a bounded time, so a probe gets its answer in about a second even when the database
hangs instead of refusing connections.

The database decides readiness: a replica that cannot reach it answers 503 and the load
balancer stops sending it traffic, until it can again. Redis does not: without it the limits do
what `limits.redis_down` says on every replica alike (rates on each replica's own counters by
default), and changes reach the other replicas through the database (cluster/fanout.py), so a
Redis outage that took every replica out of the pool at once would turn a degraded cluster into
a dead one. It shows as `"redis": "unreachable"` in a 200 answer.

Each check runs at most once at a time per worker: concurrent probes share the one in flight,
and a check that hangs is abandoned by the probes (answered as unreachable after
`PROBE_SECONDS`) and cut off on its own after `CHECK_SECONDS`, never piling up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from unigate.store.db import ping

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from unigate.store.aio import AsyncEngine

PROBE_SECONDS = 0.8  # how long a probe waits for the checks
CHECK_SECONDS = 5.0  # a check still running after this is cancelled (a hung connect)
OK, UNREACHABLE, NOT_CONFIGURED = "ok", "unreachable", "not configured"


class _Shared:
    """One run of `check` at a time; every caller waits on it for at most `wait` seconds."""

    def __init__(self, check: Callable[[], Awaitable[None]]) -> None:
        self._check = check
        self._task: asyncio.Task[None] | None = None

    async def passes(self, wait: float) -> bool:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._bounded())
            self._task.add_done_callback(_consume)
        try:
            await asyncio.wait_for(asyncio.shield(self._task), wait)
        except Exception:  # the check's failure, or its running late
            return False
        return True

    async def _bounded(self) -> None:
        async with asyncio.timeout(CHECK_SECONDS):
            await self._check()


def _consume(task: asyncio.Task[None]) -> None:
    # A failure nobody awaited any more (every probe timed out) is still not an error to log.
    if not task.cancelled():
        task.exception()


class Readiness:
    def __init__(self, engine: AsyncEngine, redis: Redis | None) -> None:
        self._redis = redis

        async def database() -> None:
            async with engine.connect() as conn:
                await ping(conn)

        self._database = _Shared(database)
        self._redis_check = _Shared(self._ping_redis) if redis is not None else None

    async def _ping_redis(self) -> None:
        assert self._redis is not None
        try:
            await self._redis.ping()
        except Exception:
            # A connection pooled before Redis restarted fails once, at its first use; a
            # second failure is Redis itself.
            await self._redis.ping()

    async def report(self) -> tuple[int, dict[str, Any]]:
        """(HTTP status, body): 200 when the database answers, 503 when it does not."""
        database = self._database.passes(PROBE_SECONDS)
        if self._redis_check is None:
            db_ok = await database
            redis = NOT_CONFIGURED
        else:
            db_ok, redis_ok = await asyncio.gather(database, self._redis_check.passes(PROBE_SECONDS))
            redis = OK if redis_ok else UNREACHABLE
        body = {"status": "ready" if db_ok else "unavailable", "database": OK if db_ok else UNREACHABLE}
        body["redis"] = redis
        return (200 if db_ok else 503), body
