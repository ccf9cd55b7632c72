"""Usage accounting off the request path.

`record` adds a request to an in-memory bucket per (key, endpoint, model, provider, upstream
model, status); a background task writes one row per bucket each interval (and on shutdown).
A few rows a second instead of one per request: per-request rows kept a database thread busy
under load and cost the request path ~70 µs each in GIL hand-offs on this machine.

A write that fails (the database away, its disk full) leaves the buckets in memory, merged
with what comes meanwhile, and they are written once the database takes them: accounting is
lost only past `max_buckets` distinct buckets (logged), or at a shutdown that cannot write.

One write runs at a time: a caller's `flush` (a budget's `spent`, the usage report) that came
while the loop was writing waits for that write, so it returns only once everything recorded
before it is in the database, or raises; and `pending` counts the requests of a write in
progress, which are out of the buckets but not yet written. A flush whose caller is cancelled
(the loop, at a shutdown past its grace) does not cancel its write (usage/serial_writes.py):
the final flush at shutdown waits for it, then writes the rest."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Final, NamedTuple

import sqlalchemy as sa

from unigate.background import Periodic
from unigate.store.aio import AsyncEngine
from unigate.store.db import failure_reason, insert_sql, is_outage
from unigate.store.schema import usage_records
from unigate.usage.serial_writes import SerialWrites

log: Final = logging.getLogger("unigate.usage")

_CHUNK: Final = 500


class Usage:
    """A call's token counts. A class with its own `__init__`, not a dataclass: this module is
    compiled, and a compiled dataclass's generated `__init__` still runs as Python (~250 ns
    a call, several calls a request)."""

    __slots__ = ("completion_tokens", "prompt_tokens")

    def __init__(self, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Usage):
            return NotImplemented
        return (self.prompt_tokens, self.completion_tokens) == (other.prompt_tokens, other.completion_tokens)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __repr__(self) -> str:
        return f"Usage(prompt_tokens={self.prompt_tokens}, completion_tokens={self.completion_tokens})"


class UsageRecord(NamedTuple):
    """One accounted request: `UsageRecorder.record`'s fields, in its order, and the columns
    of a usage row."""

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
    batch: str = ""  # the batch a line of one was run for ("" for a direct call)


_BucketKey = tuple[str, str, str, str, str, int, str]


class UsageRecorder:
    def __init__(self, engine: AsyncEngine, interval: float = 1.0, max_buckets: int = 100_000) -> None:
        self._engine = engine
        self._max_buckets = max_buckets
        # bucket -> [requests, prompt tokens, completion tokens, latency ms (sum), cost, first seen]
        self._buckets: dict[_BucketKey, list[float]] = {}
        self._loop = Periodic("usage-flush", self._flush_step, interval)
        # Rows are buckets; the per-request `request_id` column stays empty for them.
        columns = ("request_id", *UsageRecord._fields, "requests")
        self._insert_sql = insert_sql(engine.dialect.paramstyle, usage_records.name, columns)
        self.dropped = 0  # calls not accounted (past max_buckets)
        self._shedding = False  # logged once until a write works again
        self._writing = 0  # requests taken out of the buckets by the write in progress
        self._writes = SerialWrites()

    def record(
        self,
        key_id: str,
        endpoint: str,
        model: str,
        provider: str,
        upstream_model: str,
        status: int,
        prompt_tokens: int,
        completion_tokens: int,
        latency_ms: float,
        cost: float,
        created_at: float,
        batch: str = "",
    ) -> None:
        """Add one accounted call (`UsageRecord`'s fields, in its order) to its bucket. Fields,
        not a record: every call pays this, and building a tuple only to take it apart again
        cost a third of it."""
        key = (key_id, endpoint, model, provider, upstream_model, status, batch)
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._max_buckets:
                # The database is not keeping up; shedding accounting beats exhausting memory.
                if not self._shedding:
                    self._shedding = True
                    log.error(
                        "usage: %d buckets wait to be written; calls of new buckets are not "
                        "accounted until the database takes them",
                        len(self._buckets),
                    )
                self.dropped += 1
                return
            self._buckets[key] = [1, prompt_tokens, completion_tokens, latency_ms, cost, created_at]
            return
        bucket[0] += 1
        bucket[1] += prompt_tokens
        bucket[2] += completion_tokens
        bucket[3] += latency_ms
        bucket[4] += cost

    def refund(self, key_id: str, endpoint: str, model: str, provider: str, amount: float) -> None:
        """Money given back after the fact (a failed task's price): a row of no requests and
        negative cost, so usage, cost and budgets read from the records stay true."""
        key = (key_id, endpoint, model, provider, "", 0, "")
        bucket = self._buckets.get(key)
        if bucket is None:
            self._buckets[key] = [0, 0, 0, 0.0, -amount, time.time()]
        else:
            bucket[4] -= amount

    @property
    def pending(self) -> int:
        """Requests recorded but not yet written."""
        return self._writing + int(sum(b[0] for b in self._buckets.values()))

    async def flush(self, required: bool = True) -> int:
        """Write every bucket (chunked, yielding between chunks); returns the number of
        requests written. On failure the buckets not written are merged back for the next
        attempt, and the error is raised; with `required=False` an outage is not (a reader
        that wanted them written first does without: the loop writes them later)."""
        if not self._buckets and not self._writes.busy:
            return 0  # nothing recorded, nothing being written: no task to start
        try:
            return await self._writes.run(self._flush)
        except Exception as exc:
            if required or not is_outage(exc):
                raise
            return 0

    async def _flush(self) -> int:
        if not self._buckets:
            return 0
        buckets, self._buckets = self._buckets, {}
        rows = [
            ("", key_id, endpoint, model, provider, upstream, status, int(b[1]), int(b[2]), b[3], b[4], b[5],
             batch, int(b[0]))
            for (key_id, endpoint, model, provider, upstream, status, batch), b in buckets.items()
        ]  # fmt: skip
        requests = sum(int(r[-1]) for r in rows)
        self._writing = requests
        written = 0
        try:
            for start in range(0, len(rows), _CHUNK):
                chunk = rows[start : start + _CHUNK]
                async with self._engine.begin() as conn:
                    await conn.exec_driver_sql(self._insert_sql, chunk)
                written = start + _CHUNK
                self._writing -= sum(int(r[-1]) for r in chunk)
                await asyncio.sleep(0)
        except Exception:
            for row in rows[written:]:
                self._merge(row)
            raise  # the loop logs it (once for a run of failures, background.py)
        finally:
            self._writing = 0
        self._shedding = False
        return requests

    def _merge(self, row: tuple[Any, ...]) -> None:
        key = (row[1], row[2], row[3], row[4], row[5], row[6], row[12])
        bucket = self._buckets.get(key)
        if bucket is None:
            self._buckets[key] = [row[13], row[7], row[8], row[9], row[10], row[11]]
        else:
            for i, j in ((0, 13), (1, 7), (2, 8), (3, 9), (4, 10)):
                bucket[i] += row[j]
            bucket[5] = min(bucket[5], row[11])

    async def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        try:
            await self.flush()
        except Exception as exc:
            log.error("usage of %d requests not written at shutdown: %s", self.pending, failure_reason(exc))

    async def _flush_step(self) -> None:
        await self.flush()

    async def spent(self, key_id: str, since: float) -> float:
        """Money a key spent since `since` (a budget period's start): this process's pending
        records written first, so the figure includes them. When they cannot be written this
        raises (a 503 for the call that needed the figure): money fails closed."""
        await self.flush()
        u = usage_records.c
        query = sa.select(sa.func.sum(u.cost)).where(u.key_id == key_id, u.created_at >= since)
        async with self._engine.connect() as conn:
            value = (await conn.execute(query)).scalar()
        return float(value or 0.0)
