"""Stored responses: one row per response (the Response object and its input items), owner
scoped like tasks. A conversation is rebuilt from rows alone by following `previous_id` in
one recursive query, so `previous_response_id` works on any worker or gateway process sharing
the database the moment the previous call's answer was sent."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from unigate.store.schema import response_events, responses

Json = dict[str, Any]
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
    )


class ResponseStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def insert(
        self,
        r: StoredResponse,
        request: Json | None = None,
        lease: tuple[str, float] | None = None,
        events: Sequence[tuple[int, bytes]] = (),
    ) -> None:
        """Store a response. A background one comes with its create request, the lease of the
        worker that runs it and its first events."""
        values = {
            "id": r.id,
            "key_id": r.key_id,
            "model": r.model,
            "provider": r.provider,
            "native": r.native,
            "status": r.status,
            "previous_id": r.previous_id,
            "background": r.background,
            "request": orjson.dumps(request).decode() if request is not None else "",
            "body": orjson.dumps(r.body).decode(),
            "input": orjson.dumps(r.input).decode(),
            "lease_owner": lease[0] if lease else None,
            "lease_until": lease[1] if lease else 0.0,
            "created_at": r.created_at,
            "updated_at": time.time(),
        }
        async with self.engine.begin() as conn:
            await conn.execute(responses.insert().values(values))
            if events:
                rows = [{"response_id": r.id, "sequence_number": n, "data": d.decode()} for n, d in events]
                await conn.execute(response_events.insert(), rows)

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
            result = await conn.execute(
                responses.delete().where(responses.c.id == response_id, responses.c.key_id == key_id)
            )
            if not result.rowcount:
                return False
            await conn.execute(response_events.delete().where(response_events.c.response_id == response_id))
        return True

    async def purge(self, before: float, batch: int = 1000) -> int:
        """Delete responses created before `before` (and their events); returns how many.
        In batches, so a large backlog never holds the write lock for long."""
        removed = 0
        while True:
            async with self.engine.begin() as conn:
                ids = (
                    (
                        await conn.execute(
                            sa.select(responses.c.id).where(responses.c.created_at < before).limit(batch)
                        )
                    )
                    .scalars()
                    .all()
                )
                if not ids:
                    return removed
                await conn.execute(responses.delete().where(responses.c.id.in_(ids)))
                await conn.execute(response_events.delete().where(response_events.c.response_id.in_(ids)))
            removed += len(ids)
            if len(ids) < batch:
                return removed
