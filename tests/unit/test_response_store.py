"""Stored responses on SQLite and PostgreSQL: owner scoping, conversations rebuilt by the
recursive query (oldest first, cut at another owner's row), delete and the retention purge."""

from __future__ import annotations

import asyncio
import time

from unigate.responses.store import ResponseStore, StoredResponse
from unigate.store import db


def _response(rid: str, key: str, previous: str | None, created: float | None = None) -> StoredResponse:
    return StoredResponse(
        id=rid,
        key_id=key,
        model="m",
        provider="p",
        native=rid.endswith("n"),
        status="completed",
        previous_id=previous,
        body={"id": rid, "output": [{"type": "message", "id": f"out-{rid}"}]},
        input=[{"type": "message", "id": f"in-{rid}", "text": "é\u0000"}],
        created_at=time.time() if created is None else created,
    )


def test_store_chain_delete_and_purge(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store = ResponseStore(engine)
        await store.insert(_response("r1", "k1", None, created=100.0))
        await store.insert(_response("r2n", "k1", "r1"))
        await store.insert(_response("r3", "k1", "r2n"))
        await store.insert(_response("x1", "k2", "r3"))  # another key continuing k1's id: cut there
        got = await store.get("r2n", "k1")
        assert got is not None and got.native and got.previous_id == "r1" and got.output[0]["id"] == "out-r2n"
        assert got.input[0]["text"] == "é\u0000"
        assert await store.get("r2n", "k2") is None
        assert [r.id for r in await store.chain("r3", "k1")] == ["r1", "r2n", "r3"]
        assert [r.id for r in await store.chain("x1", "k2")] == ["x1"]
        assert await store.chain("r3", "k2") == []
        assert not await store.delete("r3", "k2") and await store.delete("r3", "k1")
        assert await store.get("r3", "k1") is None
        assert await store.purge(before=1000.0) == 1  # r1 only
        assert [r.id for r in await store.chain("r2n", "k1")] == ["r2n"]  # its predecessor is gone
        await engine.dispose()

    asyncio.run(run())
