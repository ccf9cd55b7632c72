"""Background responses in the database: their state changes, the lease of the worker running
one, and the stream events a client replays (`GET /v1/responses/{id}?stream=true`).

A worker runs a background response while it holds its lease (`lease_owner`, renewed every
few seconds); a lease that lapses (the worker died) lets any worker of any gateway process
sharing the database claim the response and run it again. State changes are compare-and-set
on the status, so a cancel is never overwritten by a finishing run, nor a finished run by a
cancel. A response's final state is written in one transaction with the events not written
yet, so whoever reads the final state finds the whole stream, and once a response is no
longer pending (cancelled, finished, deleted) nothing more is written for it.

Bytes written count against the key's storage quota in the same transactions
(`store/key_storage.py`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa

from unigate.responses.store import PENDING, output_tokens, usage_tokens
from unigate.store import key_storage
from unigate.store.aio import AsyncEngine
from unigate.store.schema import response_events, responses

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DueRun:
    """A background response whose lease lapsed: what a worker needs to run it again."""

    id: str
    key_id: str
    lease_until: float
    request: Json
    body: Json


class BackgroundRuns:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def set_state(
        self, response_id: str, owner: str, body: Json, events: Sequence[tuple[int, bytes]] = ()
    ) -> bool:
        """Move a pending response `owner` holds the lease of to `body["status"]` with the events
        that say so, in one transaction; False (and nothing written) when it is no longer
        pending (cancelled or deleted meanwhile) or another worker took its lease over."""
        text = orjson.dumps(body)
        size = len(text) + sum(len(d) for _, d in events)
        c = responses.c
        values: dict[str, Any] = {
            "status": body["status"],
            "body": text.decode(),
            "updated_at": time.time(),
            "size_bytes": c.size_bytes + size,
        }
        if body["status"] not in PENDING:
            # The turn's output joins the conversation's size (its input was counted when the
            # response was accepted); the upstream's own token count wins.
            counted = usage_tokens(body)
            values["context_bytes"] = c.context_bytes + len(text)
            values["context_tokens"] = (
                counted if counted is not None else c.context_tokens + output_tokens(body)
            )
        async with self.engine.begin() as conn:
            key_id = await conn.scalar(
                responses.update()
                .where(c.id == response_id, c.status.in_(PENDING), c.lease_owner == owner)
                .values(values)
                .returning(c.key_id)
            )
            if key_id is None:
                return False
            if events:
                await conn.execute(response_events.insert(), _event_rows(response_id, events))
            await key_storage.add(conn, {key_id: size})
        return True

    async def cancel(self, response_id: str, key_id: str, body: Json) -> bool:
        """Cancel a pending response of `key_id`; False when it is not pending."""
        async with self.engine.begin() as conn:
            result = await conn.execute(
                responses.update()
                .where(
                    responses.c.id == response_id,
                    responses.c.key_id == key_id,
                    responses.c.status.in_(PENDING),
                )
                .values(
                    status="cancelled",
                    body=orjson.dumps(body).decode(),
                    lease_until=0.0,
                    updated_at=time.time(),
                )
            )
        return bool(result.rowcount)

    async def append(self, response_id: str, owner: str, events: Sequence[tuple[int, bytes]]) -> bool:
        """Add a running response's events; dropped (False) when it is no longer pending, so a
        cancelled run emits nothing further and a deleted one leaves no rows behind, or when
        `owner` lost its lease (a run late to renew it, whose response another worker started
        over: its events must not land among the new run's). The check is an update of the
        row, which holds its lock until the events are in: a delete or a take-over waits for
        them and removes them with the row's other events."""
        if not events:
            return True
        size = sum(len(d) for _, d in events)
        c = responses.c
        async with self.engine.begin() as conn:
            key_id = await conn.scalar(
                responses.update()
                .where(c.id == response_id, c.status.in_(PENDING), c.lease_owner == owner)
                .values(size_bytes=c.size_bytes + size, updated_at=time.time())
                .returning(c.key_id)
            )
            if key_id is None:
                return False
            await conn.execute(response_events.insert(), _event_rows(response_id, events))
            await key_storage.add(conn, {key_id: size})
        return True

    async def events_after(self, response_id: str, after: int, limit: int = 500) -> list[tuple[int, bytes]]:
        stmt = (
            sa.select(response_events.c.sequence_number, response_events.c.data)
            .where(response_events.c.response_id == response_id, response_events.c.sequence_number > after)
            .order_by(response_events.c.sequence_number)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [(int(seq), data.encode()) for seq, data in rows]

    async def status(self, response_id: str) -> str | None:
        async with self.engine.connect() as conn:
            found = await conn.scalar(sa.select(responses.c.status).where(responses.c.id == response_id))
        return str(found) if found is not None else None

    # -- leases ---------------------------------------------------------------------------

    async def renew(self, owner: str, ids: Iterable[str], until: float) -> set[str]:
        """Extend `owner`'s leases of `ids`; returns those it no longer runs: not pending
        (cancelled, deleted) or taken over by another worker after the lease lapsed."""
        wanted = list(ids)
        if not wanted:
            return set()
        async with self.engine.begin() as conn:
            await conn.execute(
                responses.update()
                .where(
                    responses.c.id.in_(wanted),
                    responses.c.lease_owner == owner,
                    responses.c.status.in_(PENDING),
                )
                .values(lease_until=until)
            )
            rows = (
                await conn.execute(
                    sa.select(responses.c.id).where(
                        responses.c.id.in_(wanted),
                        responses.c.status.in_(PENDING),
                        responses.c.lease_owner == owner,
                    )
                )
            ).all()
        return set(wanted) - {row.id for row in rows}

    async def release(self, owner: str, ids: Iterable[str]) -> None:
        """Give leases back (a graceful stop): another worker claims them at once."""
        wanted = list(ids)
        if wanted:
            async with self.engine.begin() as conn:
                await conn.execute(
                    responses.update()
                    .where(responses.c.id.in_(wanted), responses.c.lease_owner == owner)
                    .values(lease_until=0.0)
                )

    async def due(self, now: float, limit: int = 20) -> list[DueRun]:
        stmt = (
            sa.select(
                responses.c.id,
                responses.c.key_id,
                responses.c.lease_until,
                responses.c.request,
                responses.c.body,
            )
            .where(
                responses.c.status.in_(PENDING),
                responses.c.lease_until < now,
                responses.c.background.is_(True),
            )
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [
            DueRun(r.id, r.key_id, r.lease_until, orjson.loads(r.request), orjson.loads(r.body)) for r in rows
        ]

    async def claim(self, run: DueRun, owner: str, until: float, keep_events: int) -> bool:
        """Take a lapsed lease (compare-and-set on the lease seen); the events a previous run
        wrote after the first `keep_events` are dropped, since the run starts over."""
        async with self.engine.begin() as conn:
            result = await conn.execute(
                responses.update()
                .where(
                    responses.c.id == run.id,
                    responses.c.lease_until == run.lease_until,
                    responses.c.status.in_(PENDING),
                )
                .values(lease_owner=owner, lease_until=until)
            )
            if not result.rowcount:
                return False
            await conn.execute(
                response_events.delete().where(
                    response_events.c.response_id == run.id, response_events.c.sequence_number >= keep_events
                )
            )
        return True


def _event_rows(response_id: str, events: Sequence[tuple[int, bytes]]) -> list[Json]:
    return [
        {"response_id": response_id, "sequence_number": seq, "data": data.decode()} for seq, data in events
    ]
