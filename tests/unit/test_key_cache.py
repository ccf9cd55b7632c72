"""The key cache (auth/cache.py) against invalidations that race a lookup: a record read from
the database before a change, and handed back after the change's invalidation, must not be
cached (nothing would evict it later: the revoked key would stay usable on that worker)."""

from __future__ import annotations

import asyncio
from typing import cast

from unigate.auth.cache import KeyCache
from unigate.auth.principal import Principal
from unigate.store.keys import KeyStore


class SlowStore:
    """`by_hash` answers what the row held when the read started, once released."""

    def __init__(self, record: Principal | None) -> None:
        self.record = record
        self.release = asyncio.Event()
        self.reads = 0

    async def by_hash(self, key_hash: str) -> Principal | None:
        self.reads += 1
        seen = self.record
        await self.release.wait()
        return seen


def _principal(revoked_at: float | None = None) -> Principal:
    return Principal(
        key_id="key_1", name="k", key_hash="h", prefix="ugk_…", models=(), families=(), rpm=None, tpm=None,
        budget=None, budget_period="total", expires_at=None, revoked_at=revoked_at, created_at=0.0,
        webhook_secret="whsec_x",  # pragma: allowlist secret
    )  # fmt: skip


def test_a_lookup_overlapping_an_invalidation_is_not_cached() -> None:
    async def run() -> None:
        store = SlowStore(_principal())
        cache = KeyCache(cast(KeyStore, store))
        lookup = asyncio.create_task(cache.lookup("h"))
        await asyncio.sleep(0)  # the read has started, on the record before the revocation
        store.record = _principal(revoked_at=1.0)
        cache.invalidate("h")  # the revocation's fan-out arrives while the read is under way
        store.release.set()
        assert (await lookup) is not None  # this request's answer (it started before)
        assert cache.peek("h") is None  # but not kept
        again = await cache.lookup("h")
        assert again is not None and again.revoked_at == 1.0 and store.reads == 2
        assert cache.peek("h") is again  # no race this time: cached

    asyncio.run(run())


def test_a_miss_overlapping_a_creation_is_not_remembered() -> None:
    async def run() -> None:
        store = SlowStore(None)
        cache = KeyCache(cast(KeyStore, store))
        lookup = asyncio.create_task(cache.lookup("h"))
        await asyncio.sleep(0)
        store.record = _principal()
        cache.invalidate("h")  # the key was created elsewhere meanwhile
        store.release.set()
        assert (await lookup) is None
        assert await cache.lookup("h") is not None  # the miss was not remembered for 2 s

    asyncio.run(run())
