"""The fan-out of changes (cluster/fanout.py) between "workers" in one process: each Fanout is
what one worker runs, on a real database (SQLite and PostgreSQL) and a real Redis."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator

import pytest

from tests.support.redis import RedisServer, redis_server
from unigate.cluster import fanout as fanout_module
from unigate.cluster.fanout import ALONE_CHECK, Fanout
from unigate.store import changes, db
from unigate.store.changes import Change, ChangeFeed, process_origin
from unigate.store.keys import KeyStore
from unigate.store.redis import connect


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


class Worker:
    """One Fanout and what it applied, with the monotonic time it applied each row."""

    def __init__(self, feed: ChangeFeed) -> None:
        self.fanout = Fanout(feed, process_origin())
        self.keys: list[tuple[float, Change]] = []
        self.reloads: list[Change] = []
        self.fanout.listen(changes.KEY, lambda c: self.keys.append((time.monotonic(), c)))
        self.fanout.listen(changes.CONFIG, self.reloads.append)

    async def applied(self, key_id: str, timeout: float) -> float:
        """When this worker applied a change to `key_id` (waits up to `timeout`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, change in self.keys:
                if change.key_id == key_id:
                    return at
            await asyncio.sleep(0.005)
        raise AssertionError(f"{key_id} not applied within {timeout} s")


async def _until(check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def _run(database_url: str, redis_url: str | None, body: Callable[..., Awaitable[None]]) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        client = connect(redis_url) if redis_url else None
        feed = ChangeFeed(engine)
        a, b = Worker(feed), Worker(feed)
        await a.fanout.start(client)
        await b.fanout.start(client)
        try:
            store = KeyStore(engine, a.fanout.origin, announce=a.fanout.announce)
            await body(a, b, store)
        finally:
            await a.fanout.stop()
            await b.fanout.stop()
            if client is not None:
                await client.aclose()
            await engine.dispose()

    asyncio.run(run())


@pytest.mark.services
def test_a_revocation_reaches_a_subscribed_worker_at_once(database_url: str, redis: RedisServer) -> None:
    async def body(a: Worker, b: Worker, store: KeyStore) -> None:
        await _until(lambda: a.fanout.subscribed and b.fanout.subscribed, 5)
        await asyncio.sleep(0.1)  # the resubscription's own feed read is done
        _, record = await store.create("k")
        await b.applied(record.key_id, 2)  # creation is announced too (a remembered miss goes)
        b.keys.clear()
        started = time.monotonic()
        await store.revoke(record.key_id)
        at = await b.applied(record.key_id, 2)
        # The database check runs every 5 s while subscribed: this fast, only Redis can have told it.
        assert at - started < 0.3
        assert b.fanout.check_interval() == fanout_module.SUBSCRIBED_CHECK

    _run(database_url, redis.url, body)


@pytest.mark.services
def test_a_missed_message_is_caught_by_the_database_check(
    database_url: str, redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fanout_module, "SUBSCRIBED_CHECK", 1.0)

    async def body(a: Worker, b: Worker, store: KeyStore) -> None:
        await _until(lambda: b.fanout.subscribed, 5)
        silent = KeyStore(store._engine)  # writes without announcing: the message is "lost"
        _, record = await silent.create("k")
        await b.applied(record.key_id, 3)
        b.keys.clear()
        started = time.monotonic()
        await silent.revoke(record.key_id)
        at = await b.applied(record.key_id, 3)
        assert at - started <= 1.0 + 0.5

    _run(database_url, redis.url, body)


def test_without_redis_the_database_is_read_twice_a_second(database_url: str) -> None:
    async def body(a: Worker, b: Worker, store: KeyStore) -> None:
        assert b.fanout.check_interval() == ALONE_CHECK
        _, record = await store.create("k")
        await b.applied(record.key_id, 2)
        b.keys.clear()
        started = time.monotonic()
        await store.update(record.key_id, {"rpm": 5})
        at = await b.applied(record.key_id, 2)
        assert at - started <= ALONE_CHECK + 0.3
        assert not a.reloads and not b.reloads

    _run(database_url, None, body)


@pytest.mark.services
def test_reloads_reach_the_others_not_the_asker_and_coalesce(database_url: str, redis: RedisServer) -> None:
    async def body(a: Worker, b: Worker, store: KeyStore) -> None:
        await _until(lambda: a.fanout.subscribed and b.fanout.subscribed, 5)
        await a.fanout.announce_reload()
        await _until(lambda: len(b.reloads) == 1, 2)
        await asyncio.sleep(0.3)
        assert a.reloads == []  # it reloaded itself before asking
        # Several pending reloads found in one read are one re-read of the file.
        feed = ChangeFeed(store._engine)
        b.fanout._channel = None  # nothing published: only the next read finds them
        for _ in range(3):
            await feed.add(changes.CONFIG, a.fanout.origin)
        await b.fanout.check("test")
        assert len(b.reloads) == 2

    _run(database_url, redis.url, body)


@pytest.mark.services
def test_the_subscriber_reconnects_by_itself(postgres_url: str, redis: RedisServer) -> None:
    async def body(a: Worker, b: Worker, store: KeyStore) -> None:
        await _until(lambda: b.fanout.subscribed, 5)
        redis.stop()
        try:
            await _until(lambda: not b.fanout.subscribed, 5)
            assert b.fanout.check_interval() == ALONE_CHECK  # the database is the path meanwhile
            _, record = await store.create("while-down")  # its publish fails; logged, not raised
            await b.applied(record.key_id, 2)
            b.keys.clear()
            started = time.monotonic()
            await store.revoke(record.key_id)
            assert await b.applied(record.key_id, 2) - started <= ALONE_CHECK + 0.3
        finally:
            redis.start()
        await _until(lambda: b.fanout.subscribed, 5)  # backoff at most 2 s
        await asyncio.sleep(0.1)
        _, record = await store.create("after")
        await b.applied(record.key_id, 2)
        b.keys.clear()
        started = time.monotonic()
        await store.revoke(record.key_id)
        assert await b.applied(record.key_id, 2) - started < 0.3

    _run(postgres_url, redis.url, body)


def test_feed_rows_become_visible_in_seq_order(database_url: str) -> None:
    """A reader's cursor never skips a row: with concurrent writers whose commits are delayed at
    random, every row written is read exactly once by a reader reading all along."""

    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        feed = ChangeFeed(engine)
        cursor = await feed.latest()
        seen: list[int] = []
        written: list[int] = []
        done = asyncio.Event()

        async def writer(n: int) -> None:
            for i in range(8):
                async with engine.begin() as conn:
                    written.append(await changes.append(conn, changes.KEY, f"w{n}", f"key_{n}_{i}", "h"))
                    await asyncio.sleep(random.uniform(0, 0.01))  # commit later than the insert

        async def reader() -> None:
            nonlocal cursor
            while True:
                last = done.is_set()
                for change in await feed.since(cursor):
                    seen.append(change.seq)
                    cursor = change.seq
                if last:
                    return
                await asyncio.sleep(0.002)

        reading = asyncio.create_task(reader())
        await asyncio.gather(*(writer(n) for n in range(6)))
        done.set()
        await reading
        await engine.dispose()
        assert sorted(seen) == sorted(written) and len(seen) == len(set(seen)) == 48

    asyncio.run(run())
