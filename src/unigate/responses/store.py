"""Stored responses: one row per response (the Response object and its input items), owner
scoped like tasks. A conversation is rebuilt from rows alone by following `previous_id` in
one recursive query, so `previous_response_id` works on any worker or gateway process sharing
the database the moment the previous call's answer was sent.

Each row also keeps what it costs: its own size, counted against its key's storage quota in the
same transaction (`store/key_storage.py`), and the size of the conversation it ends, in bytes
and tokens, so a continuation is bounded by one point read before any turn is loaded."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa

from unigate.limits.estimate import prompt_tokens
from unigate.store import key_storage
from unigate.store.aio import AsyncEngine
from unigate.store.schema import response_events, responses
from unigate.store.sqlite_reader import sqlite_path
from unigate.store.sqlite_writer import SQLiteWriter, compile_insert
from unigate.tasks.group_commit import GroupCommit

Json = dict[str, Any]
PENDING = ("queued", "in_progress")  # a background response still running
# The longest conversation rebuilt: past it the oldest turns are left out.
MAX_TURNS = 1000
_CHAIN = sa.text(
    """
    WITH RECURSIVE chain(id, previous_id, depth) AS (
        SELECT id, previous_id, 0 FROM responses WHERE id = :id AND key_id = :key_id
        UNION ALL
        SELECT r.id, r.previous_id, chain.depth + 1 FROM responses r JOIN chain ON r.id = chain.previous_id
        WHERE r.key_id = :key_id AND chain.depth < :turns
    )
    SELECT r.*, chain.depth FROM chain JOIN responses r ON r.id = chain.id ORDER BY chain.depth DESC
    """
)


@dataclass(slots=True)
class StoredResponse:
    id: str
    key_id: str
    model: str
    provider: str
    native: bool
    status: str
    previous_id: str | None
    body: Json
    input: list[Json]
    background: bool = False
    created_at: float = field(default_factory=time.time)
    # The conversation through this response (see `Context`); read from the row.
    context_bytes: int = 0
    context_tokens: int = 0

    @property
    def output(self) -> list[Json]:
        output = self.body.get("output")
        return output if isinstance(output, list) else []


def _row(row: Any) -> StoredResponse:
    return StoredResponse(
        id=row.id,
        key_id=row.key_id,
        model=row.model,
        provider=row.provider,
        native=bool(row.native),
        status=row.status,
        previous_id=row.previous_id,
        body=orjson.loads(row.body),
        input=orjson.loads(row.input),
        background=bool(row.background),
        created_at=row.created_at,
        context_bytes=row.context_bytes,
        context_tokens=row.context_tokens,
    )


@dataclass(frozen=True, slots=True)
class Head:
    """What a continuation needs to know of the response it continues, without its turns."""

    status: str
    context_bytes: int
    context_tokens: int


def usage_tokens(body: Json) -> int | None:
    """A finished response's whole context in tokens as its upstream counted them (its input,
    which includes every earlier turn, plus its output), if it reports usage."""
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return None
    counted = usage.get("input_tokens"), usage.get("output_tokens")
    if not all(type(n) is int for n in counted):
        return None
    return int(counted[0]) + int(counted[1])  # type: ignore[arg-type]


def output_tokens(body: Json) -> int:
    """An estimate of a response's output in tokens (for one that reports no usage)."""
    output = body.get("output")
    return prompt_tokens(output) if isinstance(output, list) else 0


@dataclass(slots=True)
class NewResponse:
    """A response to store, with what `ResponseStore.insert` takes besides it."""

    record: StoredResponse
    request: Json | None = None
    lease: tuple[str, float] | None = None
    events: Sequence[tuple[int, bytes]] = ()
    before: tuple[int, int] = (0, 0)


def _values(item: NewResponse) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The row of a new response and the rows of its events; the row's `size_bytes` is what it
    counts against its key."""
    r, request, lease, events, before = item.record, item.request, item.lease, item.events, item.before
    request_text = orjson.dumps(request) if request is not None else b""
    body_text = orjson.dumps(r.body)
    input_text = orjson.dumps(r.input)
    event_rows = [{"response_id": r.id, "sequence_number": n, "data": d.decode()} for n, d in events]
    size = len(request_text) + len(body_text) + len(input_text) + sum(len(d) for _, d in events)
    # The conversation through this turn; a pending response's output joins it when it
    # ends (`BackgroundRuns.set_state`). The upstream's own count of the tokens wins.
    context = [before[0] + len(input_text), before[1] + prompt_tokens(r.input)]
    if r.status not in PENDING:
        context[0] += len(body_text)
        counted = usage_tokens(r.body)
        context[1] = counted if counted is not None else context[1] + output_tokens(r.body)
    values = {
        "id": r.id,
        "key_id": r.key_id,
        "model": r.model,
        "provider": r.provider,
        "native": r.native,
        "status": r.status,
        "previous_id": r.previous_id,
        "background": r.background,
        "request": request_text.decode(),
        "body": body_text.decode(),
        "input": input_text.decode(),
        "lease_owner": lease[0] if lease else None,
        "lease_until": lease[1] if lease else 0.0,
        "created_at": r.created_at,
        "updated_at": time.time(),
        "size_bytes": size,
        "context_bytes": context[0],
        "context_tokens": context[1],
    }
    return values, event_rows


_INSERT = compile_insert(responses.insert())
_INSERT_EVENTS = compile_insert(response_events.insert())
_ADD_BYTES = compile_insert(key_storage.sqlite_add())


class ResponseStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        # The stored responses of calls answered together share one transaction (the callers
        # log a failure: it reaches each as the exception its row's insert raised).
        self.writer = GroupCommit(self, what="response", log_failures=False)
        # On SQLite that transaction is one thread hand-off rather than one per statement.
        path = sqlite_path(engine.url.render_as_string(hide_password=False))
        self._sqlite = SQLiteWriter(path, "response-writer") if path is not None else None

    async def close(self) -> None:
        """Stop the writer (what it was given is committed first)."""
        await self.writer.stop()
        if self._sqlite is not None:
            await self._sqlite.close()

    async def save(self, r: StoredResponse, before: tuple[int, int] = (0, 0)) -> None:
        """Store a finished response; returns once it is committed (with the responses of
        concurrent calls, in one transaction)."""
        await self.writer.insert(NewResponse(r, before=before))

    async def insert(
        self,
        r: StoredResponse,
        request: Json | None = None,
        lease: tuple[str, float] | None = None,
        events: Sequence[tuple[int, bytes]] = (),
        before: tuple[int, int] = (0, 0),
    ) -> None:
        """Store a response now, in a transaction of its own. A background one comes with its
        create request, the lease of the worker that runs it and its first events. `before`:
        the size of the conversation it continues (bytes, tokens)."""
        await self.insert_batch([NewResponse(r, request, lease, events, before)])

    async def insert_batch(self, items: Sequence[NewResponse]) -> None:
        """Store several responses in one transaction (all or none)."""
        rows: list[dict[str, Any]] = []
        event_rows: list[dict[str, Any]] = []
        sizes: dict[str, int] = {}
        for item in items:
            values, events = _values(item)
            rows.append(values)
            event_rows += events
            key_id = item.record.key_id
            sizes[key_id] = sizes.get(key_id, 0) + values["size_bytes"]
        if self._sqlite is not None:
            added = [{"key_id": key, "bytes": n} for key, n in sizes.items() if n]
            await self._sqlite.write([(_INSERT, rows), (_INSERT_EVENTS, event_rows), (_ADD_BYTES, added)])
            return
        async with self.engine.begin() as conn:
            await conn.execute(responses.insert(), rows)
            if event_rows:
                await conn.execute(response_events.insert(), event_rows)
            await key_storage.add(conn, sizes)

    async def head(self, response_id: str, key_id: str) -> Head | None:
        """The status and conversation size of the key's response `response_id` (None: the key
        has no such response), read without its body or turns."""
        c = responses.c
        stmt = sa.select(c.status, c.context_bytes, c.context_tokens).where(
            c.id == response_id, c.key_id == key_id
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(stmt)).first()
        return Head(row.status, row.context_bytes, row.context_tokens) if row is not None else None

    async def get(self, response_id: str, key_id: str) -> StoredResponse | None:
        stmt = responses.select().where(responses.c.id == response_id, responses.c.key_id == key_id)
        async with self.engine.connect() as conn:
            row = (await conn.execute(stmt)).first()
        return _row(row) if row is not None else None

    async def chain(self, response_id: str, key_id: str) -> list[StoredResponse]:
        """The conversation ending with `response_id`, oldest first; [] when the key has no
        such response."""
        params = {"id": response_id, "key_id": key_id, "turns": MAX_TURNS - 1}
        async with self.engine.connect() as conn:
            rows = (await conn.execute(_CHAIN, params)).all()
        return [_row(row) for row in rows]

    async def delete(self, response_id: str, key_id: str) -> bool:
        async with self.engine.begin() as conn:
            size = await conn.scalar(
                responses.delete()
                .where(responses.c.id == response_id, responses.c.key_id == key_id)
                .returning(responses.c.size_bytes)
            )
            if size is None:
                return False
            await conn.execute(response_events.delete().where(response_events.c.response_id == response_id))
            await key_storage.add(conn, {key_id: -int(size)})
        return True

    async def purge(self, before: float, batch: int = 1000) -> int:
        """Delete responses created before `before` (and their events); returns how many.
        In batches, so a large backlog never holds the write lock for long. Events whose
        response is gone (an append that raced a delete on a database without the pending
        check's lock, or rows from before it) are swept too."""
        removed = 0
        while True:
            async with self.engine.begin() as conn:
                rows = (
                    await conn.execute(
                        sa.select(responses.c.id, responses.c.key_id, responses.c.size_bytes)
                        .where(responses.c.created_at < before)
                        .limit(batch)
                    )
                ).all()
                ids = [row.id for row in rows]
                if ids:
                    await conn.execute(responses.delete().where(responses.c.id.in_(ids)))
                    await conn.execute(response_events.delete().where(response_events.c.response_id.in_(ids)))
                    freed: dict[str, int] = {}
                    for row in rows:
                        freed[row.key_id] = freed.get(row.key_id, 0) - int(row.size_bytes)
                    await key_storage.add(conn, freed)
            removed += len(ids)
            if len(ids) < batch:
                break
        await self.sweep_orphans()
        return removed

    async def sweep_orphans(self) -> int:
        """Delete events of responses that no longer exist; returns how many."""
        orphan = ~sa.exists().where(responses.c.id == response_events.c.response_id)
        async with self.engine.begin() as conn:
            result = await conn.execute(response_events.delete().where(orphan))
        return int(result.rowcount or 0)
