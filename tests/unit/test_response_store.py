"""Stored responses on SQLite and PostgreSQL: owner scoping, conversations rebuilt by the
recursive query (oldest first, cut at another owner's row), delete and the retention purge,
the bytes each key holds and the size of each conversation, and no event rows outliving their
response."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import orjson
import sqlalchemy as sa

from unigate.responses.runs import BackgroundRuns
from unigate.responses.store import NewResponse, ResponseStore, StoredResponse
from unigate.store import db, key_storage
from unigate.store.schema import response_events


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


def test_sizes_quota_and_conversation_bounds(database_url: str) -> None:
    """Each stored byte counts against its key in the same transaction (insert, a background
    run's events and final state, delete, purge), and a response knows the size of the
    conversation it ends, so a continuation is checked from one row."""

    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store, runs = ResponseStore(engine), BackgroundRuns(engine)
        first = _response("c1", "k1", None)
        first.body["usage"] = {"input_tokens": 7, "output_tokens": 3}
        await store.insert(first)
        one = await key_storage.held(engine, "k1")
        head = await store.head("c1", "k1")
        assert head is not None and head.status == "completed"
        assert head.context_tokens == 10  # the upstream's own count: input (all turns) + output
        assert one > 0 and head.context_bytes > 0
        # A continuation without usage: the earlier turns plus an estimate of its own.
        await store.insert(_response("c2", "k1", "c1"), before=(head.context_bytes, head.context_tokens))
        second = await store.head("c2", "k1")
        assert second is not None
        assert second.context_bytes > head.context_bytes and second.context_tokens > 10
        assert await store.head("c2", "k2") is None  # owner-scoped

        # A background response: its events and final state count too.
        queued = _response("b1", "k1", None)
        queued.status, queued.background = "queued", True
        await store.insert(queued, {"model": "m"}, ("w", time.time() + 30), [(0, b"e0"), (1, b"e1")])
        before_run = await key_storage.held(engine, "k1")
        assert await runs.append("b1", "w", [(2, b"x" * 100)])
        final = {
            "id": "b1",
            "status": "completed",
            "output": [],
            "usage": {"input_tokens": 5, "output_tokens": 5},
        }
        assert await runs.set_state("b1", "w", final, [(3, b"y" * 50)])
        assert await key_storage.held(engine, "k1") >= before_run + 150
        done = await store.head("b1", "k1")
        assert done is not None and done.status == "completed" and done.context_tokens == 10

        # Delete and purge give every byte back.
        for rid in ("c2", "b1"):
            assert await store.delete(rid, "k1")
        assert await key_storage.held(engine, "k1") == one
        assert await store.purge(before=time.time() + 1) == 1
        assert await key_storage.held(engine, "k1") == 0
        await engine.dispose()

    asyncio.run(run())


def test_events_of_a_deleted_or_cancelled_run_are_dropped_and_orphans_swept(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store, runs = ResponseStore(engine), BackgroundRuns(engine)
        for rid in ("d1", "d2"):
            queued = _response(rid, "k1", None)
            queued.status, queued.background = "queued", True
            await store.insert(queued, {"model": "m"}, ("w", time.time() + 30), [(0, b"e0")])
        assert await store.delete("d1", "k1")
        assert not await runs.append("d1", "w", [(1, b"late")])  # nothing to write to: dropped
        assert not await runs.set_state("d1", "w", {"id": "d1", "status": "completed"}, [(2, b"end")])
        assert await runs.cancel("d2", "k1", {"id": "d2", "status": "cancelled"})
        assert not await runs.append("d2", "w", [(1, b"after the cancel")])
        assert [seq for seq, _ in await runs.events_after("d2", -1)] == [0]
        # Rows an older version left behind: swept by the purge.
        async with engine.begin() as conn:
            await conn.execute(
                response_events.insert(), [{"response_id": "gone", "sequence_number": 0, "data": "x"}]
            )
        assert await store.purge(before=0.0) == 0
        async with engine.connect() as conn:
            left = (await conn.execute(sa.select(response_events.c.response_id))).scalars().all()
        assert sorted(left) == ["d2"]
        await engine.dispose()

    asyncio.run(run())


def test_concurrent_saves_share_a_transaction_each_readable_when_it_returns(database_url: str) -> None:
    """Calls answered together store their responses in one transaction; each `save` returns
    only once its row is committed (readable, and counted against its key), and a bad row fails
    only its own call."""

    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store = ResponseStore(engine)
        batches: list[int] = []
        insert_batch = store.insert_batch

        async def counted(items: Sequence[NewResponse]) -> None:
            batches.append(len(items))
            await insert_batch(items)

        store.insert_batch = counted  # type: ignore[method-assign]
        await store.writer.start()

        async def save(rid: str) -> StoredResponse | None:
            await store.save(_response(rid, "k1", None))
            return await store.get(rid, "k1")  # at once: the answer has been sent by now

        got = await asyncio.gather(*(save(f"g{i}") for i in range(20)))
        assert [r.id if r else None for r in got] == [f"g{i}" for i in range(20)]
        assert len(batches) <= 2 and sum(batches) == 20, batches
        held = await key_storage.held(engine, "k1")
        sizes = sum(len(orjson.dumps(r.body)) + len(orjson.dumps(r.input)) for r in got if r)
        assert held == sizes
        # A repeated id (a native upstream's own) fails its own call, not its batch's others.
        saves = [store.save(_response(rid, "k1", None)) for rid in ("g3", "h1", "h2")]
        outcome = await asyncio.gather(*saves, return_exceptions=True)
        assert isinstance(outcome[0], sa.exc.IntegrityError) and outcome[1:] == [None, None]
        assert await store.get("h2", "k1") is not None
        await store.writer.stop()
        await engine.dispose()

    asyncio.run(run())
