"""The request log: one row per recent request, for the dashboard's "recent requests".

The request edge (app.py) appends one tuple per finished API call to an in-memory deque; a
background loop writes the deque in one batch each interval and, now and then, prunes the
table to the newest `max_rows` rows and `max_age` seconds. Nothing else happens on the
request path: no clock but the one the access line reads anyway, no escaping, no database.

The deque keeps only the newest `per_flush` requests between two writes: at a high request
rate the table would hold just the last second anyway, and writing rows only to prune them
would keep a database thread busy (the reason usage is written as buckets, usage/recorder.py).
A write that fails (the database away, its disk full) puts its rows back, within the same
bound, for the next one. Writes run one at a time, and one whose caller is cancelled (the loop,
at a shutdown past its grace) is not (usage/serial_writes.py): the final flush waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any, Final

import sqlalchemy as sa

from unigate.background import Periodic
from unigate.edge.access_log import Finished, shown_path
from unigate.store.aio import AsyncEngine
from unigate.store.db import failure_reason, insert_sql, is_outage
from unigate.store.schema import request_log
from unigate.usage.serial_writes import SerialWrites

log: Final = logging.getLogger("unigate.requests")

# The edge's record of a finished request (edge/access_log.py), the same tuple the access line
# is built from: strings and numbers only. The deque holds up to `per_flush` of them; holding
# each request's scope instead (with its headers, ~25 objects) kept ~2 MB alive at 10,000
# requests a second and cost 3.4 µs of CPU per request served (cache misses).
Entry = Finished
COLUMNS: Final = (
    "created_at", "request_id", "method", "path", "status", "latency_ms", "model", "route", "key_id",
    "outcome", "error",
)  # fmt: skip
_LIMITS: Final = {c.name: c.type.length for c in request_log.columns if isinstance(c.type, sa.String)}


class RequestLog:
    def __init__(
        self,
        engine: AsyncEngine,
        *,
        interval: float = 1.0,
        per_flush: int = 1_000,
        max_rows: int = 10_000,
        max_age: float = 24 * 3600.0,
        prune_every: float = 30.0,
    ) -> None:
        self._engine = engine
        self._pending: deque[Entry] = deque(maxlen=per_flush)
        self._max_rows = max_rows
        self._max_age = max_age
        self._prune_every = prune_every
        self._pruned_at = 0.0
        self._insert_sql = insert_sql(engine.dialect.paramstyle, request_log.name, COLUMNS)
        self._loop = Periodic("request-log", self._step, interval)
        self._writes = SerialWrites()

    def add(self, done: Finished) -> None:
        """Called once per finished API call at the edge: its record appended, nothing read or
        formatted (the deque keeps at most `per_flush` requests)."""
        self._pending.append(done)

    async def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        try:
            await self.flush()
        except Exception as exc:
            log.warning("request log: %d rows not written at shutdown: %s", len(self._pending),
                        failure_reason(exc))  # fmt: skip

    async def _step(self) -> None:
        await self.flush()
        if time.time() - self._pruned_at >= self._prune_every:
            await self.prune()

    async def flush(self) -> int:
        """Write what is pending in one transaction; returns the number of rows written. On
        failure the entries go back to the front of the deque (whose bound then drops the
        oldest: they are a view of recent traffic, not accounting) and the error is raised."""
        if not self._pending and not self._writes.busy:
            return 0
        return await self._writes.run(self._write)

    async def _write(self) -> int:
        if not self._pending:
            return 0
        entries = list(self._pending)
        self._pending.clear()
        wall = time.time() - time.perf_counter()  # perf_counter instants to wall-clock time
        rows = [_row(e, wall) for e in entries]
        try:
            async with self._engine.begin() as conn:
                await conn.exec_driver_sql(self._insert_sql, rows)
        except Exception:
            kept = deque(entries, maxlen=self._pending.maxlen)
            kept.extend(self._pending)  # what arrived meanwhile is newer
            self._pending = kept
            raise  # the loop logs it (once for a run of failures, background.py)
        await asyncio.sleep(0)
        return len(rows)

    async def prune(self) -> None:
        """Keep the newest `max_rows` rows of at most `max_age` seconds."""
        now = time.time()
        self._pruned_at = now
        r = request_log.c
        async with self._engine.begin() as conn:
            # The id bound is read first: SQLite evaluated it as a subquery of the DELETE after
            # the age condition had already removed rows, and so kept too many.
            newest_dropped = (
                await conn.execute(sa.select(r.id).order_by(r.id.desc()).offset(self._max_rows).limit(1))
            ).scalar()
            drop = r.created_at < now - self._max_age
            if newest_dropped is not None:
                drop = sa.or_(drop, r.id <= newest_dropped)
            await conn.execute(request_log.delete().where(drop))

    async def recent(
        self, limit: int, key_id: str | None = None, status: tuple[int, int] | None = None
    ) -> list[dict[str, Any]]:
        """The newest requests first (this process's pending ones written first, if the
        database takes them), optionally of one key and within a status range [low, high]."""
        try:
            await self.flush()
        except Exception as exc:
            if not is_outage(exc):
                raise
        r = request_log.c
        query = sa.select(request_log).order_by(r.created_at.desc(), r.id.desc()).limit(limit)
        if key_id is not None:
            query = query.where(r.key_id == key_id)
        if status is not None:
            query = query.where(r.status.between(*status))
        async with self._engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [
            {
                "request_id": row.request_id,
                "created_at": row.created_at,
                "method": row.method,
                "path": row.path,
                "status": row.status,
                "latency_ms": round(row.latency_ms, 3),
                "model": row.model or None,
                "route": row.route or None,
                "key_id": row.key_id or None,
                "outcome": row.outcome,
                "error": row.error or None,
            }
            for row in rows
        ]


def _row(e: Entry, wall: float) -> tuple[Any, ...]:
    """An entry as a table row: the path as the access log shows it (media names are
    capabilities), text cut to the column sizes, latency in milliseconds."""
    request_id, method, path, status, started, ended, key_id, model, route, outcome, error = e
    return (
        ended + wall,
        request_id[: _LIMITS["request_id"]],
        method[: _LIMITS["method"]],
        shown_path(path)[: _LIMITS["path"]],
        status or 499,  # the client left before any response, as the access log says
        (ended - started) * 1000.0,
        str(model or "")[: _LIMITS["model"]],
        str(route or "")[: _LIMITS["route"]],
        (key_id or "")[: _LIMITS["key_id"]],
        outcome if isinstance(outcome, int) else None,
        str(error or "")[: _LIMITS["error"]],
    )
