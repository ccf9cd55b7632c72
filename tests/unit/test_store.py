"""Key store, change feed, usage recorder and migrations on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time

import sqlalchemy as sa

from unigate.auth.cache import KeyCache
from unigate.auth.keys import hash_key, is_well_formed
from unigate.store import db
from unigate.store.changes import ChangeFeed
from unigate.store.keys import KeyStore
from unigate.usage import query as usage_query
from unigate.usage.query import UsageQuery
from unigate.usage.recorder import UsageRecord, UsageRecorder


def _record(key_id: str, model: str, prompt: int, completion: int) -> UsageRecord:
    return UsageRecord(
        key_id=key_id,
        endpoint="chat",
        model=model,
        provider="p",
        upstream_model="u",
        status=200,
        prompt_tokens=prompt,
        completion_tokens=completion,
        latency_ms=1.5,
        cost=0.25,
        created_at=time.time(),
    )


def test_migrations_are_idempotent(database_url: str) -> None:
    async def run() -> set[str]:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        await db.migrate(engine)
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: set(sa.inspect(c).get_table_names()))
        await engine.dispose()
        return names

    assert {"api_keys", "key_events", "usage_records", "alembic_version"} <= asyncio.run(run())


def test_key_lifecycle_and_change_feed(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store = KeyStore(engine)
        plain, rec = await store.create("ci", ["gpt-*"], ["text"], rpm=5, expires_at=None)
        assert is_well_formed(plain)
        fetched = await store.by_hash(hash_key(plain))
        assert fetched is not None and fetched.key_id == rec.key_id
        assert fetched.models == ("gpt-*",) and fetched.families == ("text",) and fetched.rpm == 5
        assert fetched.webhook_secret.startswith("whsec_")
        assert [p.key_id for p in await store.list_all()] == [rec.key_id]
        feed = ChangeFeed(engine)
        seq0 = await feed.latest()
        cache = KeyCache(store)
        assert await cache.lookup(hash_key(plain)) is not None
        revoked = await store.revoke(rec.key_id)
        assert revoked is not None and revoked.revoked_at is not None
        found = await feed.since(seq0)
        assert [(c.kind, c.key_id, c.key_hash) for c in found] == [("key", rec.key_id, hash_key(plain))]
        assert found[0].seq > seq0
        cache.invalidate(found[0].key_hash)  # what the fan-out does with it
        again = await cache.lookup(hash_key(plain))
        assert again is not None and again.revoked_at is not None
        assert await store.revoke("key_missing") is None
        await engine.dispose()

    asyncio.run(run())


def test_usage_batches_and_summary(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        rec = UsageRecorder(engine)
        for _ in range(3):
            rec.record(*_record("k1", "m1", 10, 5))
        rec.record(*_record("k2", "m2", 1, 1))
        assert await rec.flush() == 4
        assert await rec.flush() == 0
        rows = {(r["key_id"], r["model"]): r for r in await usage_query.run(engine, UsageQuery())}
        assert rows[("k1", "m1")]["requests"] == 3
        assert rows[("k1", "m1")]["prompt_tokens"] == 30 and rows[("k1", "m1")]["completion_tokens"] == 15
        assert rows[("k2", "m2")]["cost"] == 0.25
        await engine.dispose()

    asyncio.run(run())


def test_nul_and_unicode_names_roundtrip(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        store = KeyStore(engine)
        _, rec = await store.create("naïve — ключ 🔑")
        got = await store.get(rec.key_id)
        assert got is not None and got.name == "naïve — ключ 🔑"
        await engine.dispose()

    asyncio.run(run())
