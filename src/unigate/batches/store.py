"""Batches in the database: the batch row (state, counts, lease) and its lines.

Exactly once: a line's result is written with its done state in one transaction that also
checks the writer still holds the batch's lease and moves the batch's counts; the line's update
requires it to be pending, so a result is never written twice, and a run that lost its lease
(its worker stalled past it and another took the batch over) writes nothing. A line that ran
but whose result was not committed (the process died between the two) is still pending and is
run again by whoever resumes the batch.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa

from unigate.store.aio import AsyncConnection, AsyncEngine
from unigate.store.schema import batch_lines, batches

Json = dict[str, Any]
# Statuses a worker still has something to do for.
RUNNING = ("validating", "in_progress", "finalizing", "cancelling")
ENDED = ("completed", "failed", "expired", "cancelled")
DONE_STATES = ("succeeded", "errored", "canceled", "expired")
_INSERT_CHUNK = 500


@dataclass(frozen=True, slots=True)
class BatchRow:
    id: str
    key_id: str
    api: str
    endpoint: str
    status: str
    input_file_id: str
    output_file_id: str
    error_file_id: str
    metadata: Any
    errors: Any
    total: int
    succeeded: int
    errored: int
    canceled: int
    expired: int
    created_at: float
    expires_at: float
    in_progress_at: float | None
    finalizing_at: float | None
    cancelling_at: float | None
    ended_at: float | None
    upstream: str  # a native relay's "provider/id"; "provider/" while its submit is under way
    lease_until: float
    submitting_at: float | None  # when a native relay's submit began

    @property
    def processing(self) -> int:
        return self.total - self.succeeded - self.errored - self.canceled - self.expired


@dataclass(frozen=True, slots=True)
class NewLine:
    custom_id: str
    body: Json


@dataclass(frozen=True, slots=True)
class PendingLine:
    idx: int
    custom_id: str
    body: Json


@dataclass(frozen=True, slots=True)
class LineResult:
    """A line's end: `state` one of DONE_STATES, the HTTP status and body it was answered with."""

    idx: int
    state: str
    status_code: int
    request_id: str
    body: bytes  # the JSON response body (an error body for an errored line); b"" for none


@dataclass(frozen=True, slots=True)
class DoneLine:
    idx: int
    custom_id: str
    state: str
    status_code: int
    request_id: str
    result: bytes


def _run_by(owner: str, which: Any) -> Any:
    """The batch rows `which` picks that `owner` still runs (its lease, a running status)."""
    c = batches.c
    return sa.and_(which, c.lease_owner == owner, c.status.in_(RUNNING))


async def _hold(conn: AsyncConnection, batch_id: str, owner: str) -> bool:
    """Touch the batch row while `owner` runs it: its lock (PostgreSQL) or the write lock
    (SQLite) is held from here to the end of the transaction. False: the lease is lost."""
    held = await conn.execute(
        batches.update().where(_run_by(owner, batches.c.id == batch_id)).values(updated_at=time.time())
    )
    return bool(held.rowcount)


def _row(r: Any) -> BatchRow:
    return BatchRow(
        r.id, r.key_id, r.api, r.endpoint, r.status, r.input_file_id, r.output_file_id, r.error_file_id,
        orjson.loads(r.metadata), orjson.loads(r.errors), r.total, r.succeeded, r.errored, r.canceled,
        r.expired, r.created_at, r.expires_at, r.in_progress_at, r.finalizing_at, r.cancelling_at,
        r.ended_at, r.upstream, r.lease_until, r.submitting_at,
    )  # fmt: skip


_COLUMNS = [c for c in batches.c if c.name not in ("lease_owner", "updated_at")]
_COUNT = {"succeeded": batches.c.succeeded, "errored": batches.c.errored,
          "canceled": batches.c.canceled, "expired": batches.c.expired}  # fmt: skip


class BatchStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    # -- creating and reading ------------------------------------------------------------

    async def create(
        self,
        batch_id: str,
        key_id: str,
        api: str,
        endpoint: str,
        *,
        status: str,
        lines: Sequence[NewLine] = (),
        input_file_id: str = "",
        metadata: Any = None,
        expires_at: float,
        owner: str | None = None,
        lease_until: float = 0.0,
    ) -> None:
        """A new batch with its lines, in one transaction (`owner`: the worker that will run it
        now, holding its lease)."""
        now = time.time()
        row = {
            "id": batch_id, "key_id": key_id, "api": api, "endpoint": endpoint, "status": status,
            "input_file_id": input_file_id, "metadata": orjson.dumps(metadata).decode(),
            "total": len(lines), "created_at": now, "expires_at": expires_at,
            "in_progress_at": now if status == "in_progress" else None,
            "lease_owner": owner, "lease_until": lease_until, "updated_at": now,
        }  # fmt: skip
        async with self.engine.begin() as conn:
            await conn.execute(batches.insert(), [row])
            await self._insert_lines(conn, batch_id, lines)

    async def _insert_lines(self, conn: Any, batch_id: str, lines: Sequence[NewLine]) -> None:
        for start in range(0, len(lines), _INSERT_CHUNK):
            rows = [
                {"batch_id": batch_id, "idx": start + i, "custom_id": line.custom_id,
                 "body": orjson.dumps(line.body).decode(), "state": "pending"}
                for i, line in enumerate(lines[start : start + _INSERT_CHUNK])
            ]  # fmt: skip
            await conn.execute(batch_lines.insert(), rows)

    async def start(self, batch_id: str, owner: str, lines: Sequence[NewLine]) -> bool:
        """A validated batch's lines, and its move to `in_progress` (False: no longer validating
        or not `owner`'s, a cancel came first)."""
        async with self.engine.begin() as conn:
            moved = await conn.execute(
                batches.update()
                .where(
                    batches.c.id == batch_id, batches.c.status == "validating", batches.c.lease_owner == owner
                )
                .values(
                    status="in_progress", in_progress_at=time.time(), total=len(lines), updated_at=time.time()
                )
            )
            if not moved.rowcount:
                return False
            await self._insert_lines(conn, batch_id, lines)
        return True

    async def get(self, key_id: str, batch_id: str, api: str) -> BatchRow | None:
        """`key_id`'s batch made through `api` (another key's, or another API's, is None)."""
        c = batches.c
        stmt = sa.select(*_COLUMNS).where(c.id == batch_id, c.key_id == key_id, c.api == api)
        async with self.engine.connect() as conn:
            found = (await conn.execute(stmt)).first()
        return _row(found) if found is not None else None

    async def load(self, batch_id: str) -> BatchRow | None:
        async with self.engine.connect() as conn:
            found = (await conn.execute(sa.select(*_COLUMNS).where(batches.c.id == batch_id))).first()
        return _row(found) if found is not None else None

    async def page(
        self, key_id: str, api: str, limit: int, after: str | None = None, before: str | None = None
    ) -> list[BatchRow]:
        """Newest first; `after` (older than that batch) or `before` (newer than it)."""
        c = batches.c
        stmt = sa.select(*_COLUMNS).where(c.key_id == key_id, c.api == api)
        order = [c.created_at.desc(), c.id.desc()]
        for cursor, older in ((after, True), (before, False)):
            if cursor is None:
                continue
            async with self.engine.connect() as conn:
                at = await conn.scalar(sa.select(c.created_at).where(c.id == cursor, c.key_id == key_id))
            if at is None:
                return []
            if older:
                stmt = stmt.where(sa.or_(c.created_at < at, sa.and_(c.created_at == at, c.id < cursor)))
            else:
                stmt = stmt.where(sa.or_(c.created_at > at, sa.and_(c.created_at == at, c.id > cursor)))
                order = [c.created_at.asc(), c.id.asc()]
        async with self.engine.connect() as conn:
            rows = [_row(r) for r in (await conn.execute(stmt.order_by(*order).limit(limit))).all()]
        return rows if after is not None or before is None else rows[::-1]

    async def delete(self, key_id: str, batch_id: str, api: str) -> bool:
        """Remove an ended batch and its lines (False: not there, or not ended)."""
        c = batches.c
        async with self.engine.begin() as conn:
            gone = await conn.execute(
                batches.delete().where(
                    c.id == batch_id, c.key_id == key_id, c.api == api, c.status.in_(ENDED)
                )
            )
            if not gone.rowcount:
                return False
            await conn.execute(batch_lines.delete().where(batch_lines.c.batch_id == batch_id))
        return True

    # -- state changes ---------------------------------------------------------------------

    async def request_cancel(self, key_id: str, batch_id: str, api: str) -> bool:
        """Move a running batch to `cancelling` (False: it is not running)."""
        c = batches.c
        now = time.time()
        async with self.engine.begin() as conn:
            moved = await conn.execute(
                batches.update()
                .where(
                    c.id == batch_id, c.key_id == key_id, c.api == api,
                    c.status.in_(("validating", "in_progress", "finalizing")),
                )
                .values(status="cancelling", cancelling_at=now, updated_at=now)
            )  # fmt: skip
        return bool(moved.rowcount)

    async def move(self, batch_id: str, owner: str, status: str, **values: Any) -> bool:
        """Move a running batch `owner` holds to `status` (with `values`); False when it is
        not running or not `owner`'s. A move to an ended status gives the lease up."""
        c = batches.c
        now = time.time()
        extra: dict[str, Any] = {"status": status, "updated_at": now, **values}
        if status == "finalizing":
            extra["finalizing_at"] = now
        if status in ENDED:
            extra.update(ended_at=now, lease_owner=None, lease_until=0.0)
        async with self.engine.begin() as conn:
            moved = await conn.execute(batches.update().where(_run_by(owner, c.id == batch_id)).values(extra))
        return bool(moved.rowcount)

    async def commit(self, batch_id: str, owner: str, results: Sequence[LineResult]) -> int | None:
        """Write finished lines, each only if still pending, with the batch's counts, in one
        transaction that holds only while `owner` runs the batch. Returns how many were written
        (None: the lease is lost, nothing written)."""
        if not results:
            return 0
        c, lc = batches.c, batch_lines.c
        async with self.engine.begin() as conn:
            # First the batch row, so a take-over waits for these lines.
            if not await _hold(conn, batch_id, owner):
                return None
            # Which of them are still pending: every writer of this batch's lines updated its row
            # first, so nothing changes them between this read and the update below.
            wanted = [res.idx for res in results]
            still = set(
                (
                    await conn.execute(
                        sa.select(lc.idx).where(
                            lc.batch_id == batch_id, lc.idx.in_(wanted), lc.state == "pending"
                        )
                    )
                ).scalars()
            )
            fresh = [res for res in results if res.idx in still]
            added = dict.fromkeys(DONE_STATES, 0)
            if fresh:
                await conn.execute(
                    batch_lines.update()
                    .where(lc.batch_id == batch_id, lc.idx == sa.bindparam("b_idx"))
                    .values(
                        state=sa.bindparam("b_state"),
                        status_code=sa.bindparam("b_status"),
                        request_id=sa.bindparam("b_rid"),
                        result=sa.bindparam("b_result"),
                    ),
                    [
                        {"b_idx": r.idx, "b_state": r.state, "b_status": r.status_code, "b_rid": r.request_id,
                         "b_result": r.body.decode()}
                        for r in fresh
                    ],
                )  # fmt: skip
                for res in fresh:
                    added[res.state] += 1
            counts = {name: _COUNT[name] + n for name, n in added.items() if n}
            if counts:
                await conn.execute(batches.update().where(c.id == batch_id).values(counts))
        return sum(added.values())

    async def close_pending(self, batch_id: str, owner: str, state: str) -> bool:
        """Every line still pending becomes `state` (canceled, expired), with the counts, in one
        transaction (False: the batch is not `owner`'s any more)."""
        c, lc = batches.c, batch_lines.c
        async with self.engine.begin() as conn:
            if not await _hold(conn, batch_id, owner):
                return False
            closed = await conn.execute(
                batch_lines.update().where(lc.batch_id == batch_id, lc.state == "pending").values(state=state)
            )
            if closed.rowcount:
                await conn.execute(
                    batches.update().where(c.id == batch_id).values({state: _COUNT[state] + closed.rowcount})
                )
        return True

    # -- lines -----------------------------------------------------------------------------

    async def pending(self, batch_id: str, after: int, limit: int) -> list[PendingLine]:
        lc = batch_lines.c
        stmt = (
            sa.select(lc.idx, lc.custom_id, lc.body)
            .where(lc.batch_id == batch_id, lc.state == "pending", lc.idx > after)
            .order_by(lc.idx)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [PendingLine(r.idx, r.custom_id, orjson.loads(r.body)) for r in rows]

    async def done(self, batch_id: str, chunk: int = 1000) -> AsyncIterator[DoneLine]:
        """Every line in input order, read in chunks (a batch may hold tens of thousands)."""
        lc = batch_lines.c
        after = -1
        while True:
            stmt = (
                sa.select(lc.idx, lc.custom_id, lc.state, lc.status_code, lc.request_id, lc.result)
                .where(lc.batch_id == batch_id, lc.idx > after)
                .order_by(lc.idx)
                .limit(chunk)
            )
            async with self.engine.connect() as conn:
                rows = (await conn.execute(stmt)).all()
            for r in rows:
                yield DoneLine(r.idx, r.custom_id, r.state, r.status_code, r.request_id, r.result.encode())
            if len(rows) < chunk:
                return
            after = rows[-1].idx

    # -- leases ----------------------------------------------------------------------------

    async def renew(self, owner: str, ids: Sequence[str], until: float) -> dict[str, str]:
        """Extend `owner`'s leases; returns the status of each batch it still holds (a batch
        missing from the answer was taken over, or ended)."""
        if not ids:
            return {}
        c = batches.c
        async with self.engine.begin() as conn:
            await conn.execute(
                batches.update().where(_run_by(owner, c.id.in_(ids))).values(lease_until=until)
            )
            rows = (await conn.execute(sa.select(c.id, c.status).where(_run_by(owner, c.id.in_(ids))))).all()
        return {r.id: r.status for r in rows}

    async def release(self, owner: str, ids: Sequence[str]) -> None:
        """Give leases back (a graceful stop): another worker takes the batches up at once."""
        if ids:
            async with self.engine.begin() as conn:
                await conn.execute(
                    batches.update()
                    .where(batches.c.id.in_(ids), batches.c.lease_owner == owner)
                    .values(lease_until=0.0)
                )

    async def due(self, now: float, limit: int = 10) -> list[tuple[str, float]]:
        """Running batches whose lease lapsed: (id, the lease seen)."""
        c = batches.c
        stmt = sa.select(c.id, c.lease_until).where(c.status.in_(RUNNING), c.lease_until < now).limit(limit)
        async with self.engine.connect() as conn:
            return [(r.id, r.lease_until) for r in (await conn.execute(stmt)).all()]

    async def claim(self, batch_id: str, seen: float, owner: str, until: float) -> bool:
        """Take a lapsed lease (compare-and-set on the lease seen)."""
        c = batches.c
        async with self.engine.begin() as conn:
            taken = await conn.execute(
                batches.update()
                .where(c.id == batch_id, c.lease_until == seen, c.status.in_(RUNNING))
                .values(lease_owner=owner, lease_until=until)
            )
        return bool(taken.rowcount)
