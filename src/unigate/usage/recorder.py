"""Buffered usage writer. `record` is a list append (no I/O); a background task flushes the
buffer in one multi-row INSERT per interval, and on shutdown."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from unigate.background import Periodic
from unigate.store.schema import usage_records

log = logging.getLogger("unigate.usage")

_CHUNK = 500


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


class UsageRecord(NamedTuple):
    """One accounted request. A tuple, so buffering and batch inserts cost no conversion."""

    request_id: str
    key_id: str
    endpoint: str
    model: str
    provider: str
    upstream_model: str
    status: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cost: float
    created_at: float


class UsageRecorder:
    def __init__(self, engine: AsyncEngine, interval: float = 1.0, max_buffer: int = 100_000) -> None:
        self._engine = engine
        self._max_buffer = max_buffer
        self._buffer: list[UsageRecord] = []
        self._loop = Periodic("usage-flush", self._flush_step, interval)
        self._insert_sql = _insert_sql(engine.dialect.paramstyle)
        self.dropped = 0

    def record(self, rec: UsageRecord) -> None:
        if len(self._buffer) >= self._max_buffer:
            # The database is not keeping up; shedding accounting beats exhausting memory.
            self.dropped += 1
            return
        self._buffer.append(rec)

    async def flush(self) -> int:
        """Write the buffer in chunks, yielding to the event loop between them so a large
        backlog never stalls requests for more than a chunk's worth of work."""
        if not self._buffer:
            return 0
        batch, self._buffer = self._buffer, []
        written = 0
        try:
            for start in range(0, len(batch), _CHUNK):
                async with self._engine.begin() as conn:
                    await conn.exec_driver_sql(self._insert_sql, batch[start : start + _CHUNK])
                written = start + _CHUNK
                await asyncio.sleep(0)
        except Exception:
            kept = batch[written:]
            log.exception("usage flush failed; %d records kept for retry", len(kept))
            self._buffer[:0] = kept
            return min(written, len(batch))
        return len(batch)

    async def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        await self.flush()

    async def _flush_step(self) -> None:
        await self.flush()

    async def summary(self, since: float | None = None) -> list[dict[str, object]]:
        """Totals per key and model, for the admin API."""
        await self.flush()
        u = usage_records.c
        query = sa.select(
            u.key_id,
            u.model,
            sa.func.count().label("requests"),
            sa.func.sum(u.prompt_tokens).label("prompt_tokens"),
            sa.func.sum(u.completion_tokens).label("completion_tokens"),
            sa.func.sum(u.cost).label("cost"),
        ).group_by(u.key_id, u.model)
        if since is not None:
            query = query.where(u.created_at >= since)
        async with self._engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [
            {
                "key_id": r.key_id,
                "model": r.model,
                "requests": int(r.requests),
                "prompt_tokens": int(r.prompt_tokens or 0),
                "completion_tokens": int(r.completion_tokens or 0),
                "cost": float(r.cost or 0.0),
            }
            for r in rows
        ]


def _insert_sql(paramstyle: str) -> str:
    """A driver-level INSERT: no per-row SQLAlchemy processing on the event loop."""
    cols = list(UsageRecord._fields)
    if paramstyle == "qmark":
        marks = ["?"] * len(cols)
    elif paramstyle == "numeric_dollar":
        marks = [f"${i}" for i in range(1, len(cols) + 1)]
    elif paramstyle in ("format", "pyformat"):
        marks = ["%s"] * len(cols)
    else:
        raise ValueError(f"unsupported DBAPI paramstyle {paramstyle}")
    return f"INSERT INTO {usage_records.name} ({', '.join(cols)}) VALUES ({', '.join(marks)})"
