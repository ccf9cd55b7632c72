"""The batch store's exactly-once rules on SQLite and PostgreSQL: a line's result is written
once (a second commit of it changes nothing, counts included), a worker that lost the batch's
lease writes nothing, a take-over needs the lease seen, closing a batch marks only its pending
lines, and reads are scoped to the owner key and the API the batch was made through."""

from __future__ import annotations

import asyncio
import time

import sqlalchemy as sa

from unigate.batches.store import BatchStore, LineResult, NewLine
from unigate.store import db
from unigate.store.schema import batch_lines, batches


def _lines(n: int) -> list[NewLine]:
    return [NewLine(f"c{i}", {"model": "m", "n": i}) for i in range(n)]


def _ok(idx: int, body: bytes = b'{"ok":1}') -> LineResult:
    return LineResult(idx, "succeeded", 200, f"req-{idx}", body)


def test_results_are_written_once_and_only_under_the_lease(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store = BatchStore(engine)
        later = time.time() + 3600
        await store.create("b1", "k1", "anthropic", "/v1/messages", status="in_progress", lines=_lines(5),
                           expires_at=later, owner="w1", lease_until=time.time() + 30)  # fmt: skip
        assert await store.commit("b1", "w1", [_ok(0), _ok(1)]) == 2
        # The same lines again (a run that resumed them): nothing written, counts unchanged.
        assert await store.commit("b1", "w1", [_ok(1, b'{"again":1}'), _ok(2)]) == 1
        row = await store.get("k1", "b1", "anthropic")
        assert row is not None and (row.succeeded, row.processing) == (3, 2)
        done = [line async for line in store.done("b1")]
        assert done[1].result == b'{"ok":1}'  # the first result stands
        # Another worker takes the batch over once the lease lapses; the first one's commits
        # are refused whole from then on.
        assert not await store.claim("b1", 0.0, "w2", time.time() + 30)  # not the lease it has
        await store.release("w1", ["b1"])
        assert await store.claim("b1", 0.0, "w2", time.time() + 30)
        assert await store.commit("b1", "w1", [_ok(3)]) is None
        assert await store.renew("w1", ["b1"], time.time() + 30) == {}
        assert await store.renew("w2", ["b1"], time.time() + 30) == {"b1": "in_progress"}
        errored = LineResult(3, "errored", 429, "req-3", b'{"error":{"code":"insufficient_quota"}}')
        assert await store.commit("b1", "w2", [errored]) == 1
        # A cancel: the pending line becomes canceled, the done ones stay as they are.
        assert await store.request_cancel("k1", "b1", "anthropic")
        assert not await store.request_cancel("k1", "b1", "anthropic")  # already cancelling
        assert await store.close_pending("b1", "w2", "canceled")
        assert await store.move("b1", "w2", "cancelled")
        row = await store.get("k1", "b1", "anthropic")
        assert row is not None and row.status == "cancelled" and row.ended_at is not None
        assert (row.succeeded, row.errored, row.canceled, row.processing) == (3, 1, 1, 0)
        states = [line.state async for line in store.done("b1")]
        assert states == ["succeeded", "succeeded", "succeeded", "errored", "canceled"]
        # Owner and API scoping.
        assert await store.get("k2", "b1", "anthropic") is None
        assert await store.get("k1", "b1", "openai") is None
        assert not await store.request_cancel("k2", "b1", "anthropic")
        assert not await store.delete("k2", "b1", "anthropic")
        assert await store.delete("k1", "b1", "anthropic")
        assert [x async for x in store.done("b1")] == []
        await engine.dispose()

    asyncio.run(run())


def test_pages_are_newest_first_and_scoped(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store = BatchStore(engine)
        for i in range(5):
            await store.create(f"b{i}", "k1", "openai", "/v1/embeddings", status="validating",
                               expires_at=time.time() + 60)  # fmt: skip
            await asyncio.sleep(0.002)
        await store.create("other", "k2", "openai", "/v1/embeddings", status="validating", expires_at=0.0)
        first = await store.page("k1", "openai", 2)
        assert [r.id for r in first] == ["b4", "b3"]
        assert [r.id for r in await store.page("k1", "openai", 2, after="b3")] == ["b2", "b1"]
        assert [r.id for r in await store.page("k1", "openai", 2, before="b1")] == ["b3", "b2"]
        assert await store.page("k1", "openai", 2, after="other") == []  # another key's cursor
        assert await store.page("k1", "anthropic", 10) == []
        await engine.dispose()

    asyncio.run(run())


def test_the_migrations_make_the_declared_batch_tables(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        async with engine.connect() as conn:

            def describe(sync: sa.Connection) -> dict[str, tuple[list[str], set[str]]]:
                inspector = sa.inspect(sync)
                return {
                    table.name: (
                        [c["name"] for c in inspector.get_columns(table.name)],
                        {str(i["name"]) for i in inspector.get_indexes(table.name)},
                    )
                    for table in (batches, batch_lines)
                }

            found = await conn.run_sync(describe)
        for table in (batches, batch_lines):
            assert found[table.name] == (
                [c.name for c in table.columns],
                {str(i.name) for i in table.indexes},
            )
        await engine.dispose()

    asyncio.run(run())


def test_a_submit_under_way_is_recorded_and_read_back(database_url: str) -> None:
    # What a worker taking the batch over reads: the provider the submit went to and when it
    # began, then the upstream id once stored.
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store = BatchStore(engine)
        await store.create("b1", "k1", "openai", "/v1/chat/completions", status="in_progress",
                           lines=_lines(2), expires_at=time.time() + 60, owner="w1",
                           lease_until=time.time() + 30)  # fmt: skip
        row = await store.load("b1")
        assert row is not None and (row.upstream, row.submitting_at) == ("", None)
        began = time.time()
        assert await store.move("b1", "w1", "in_progress", upstream="oai/", submitting_at=began)
        row = await store.load("b1")
        assert row is not None and (row.upstream, row.submitting_at) == ("oai/", began)
        assert not await store.move("b1", "w2", "in_progress", upstream="oai/up_2")  # not w2's lease
        assert await store.move("b1", "w1", "in_progress", upstream="oai/up_1")
        row = await store.load("b1")
        assert row is not None and (row.upstream, row.submitting_at) == ("oai/up_1", began)
        await engine.dispose()

    asyncio.run(run())
