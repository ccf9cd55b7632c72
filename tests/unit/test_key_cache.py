"""The key cache (auth/cache.py) against invalidations that race a lookup: a record read from
the database before a change, and handed back after the change's invalidation, must not be
cached (nothing would evict it later: the revoked key would stay usable on that worker)."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

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


async def _started(store: SlowStore) -> None:
    while not store.reads:
        await asyncio.sleep(0)


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
        await _started(store)  # the read has started, on the record before the revocation
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
        await _started(store)
        store.record = _principal()
        cache.invalidate("h")  # the key was created elsewhere meanwhile
        store.release.set()
        assert (await lookup) is None
        assert await cache.lookup("h") is not None  # the miss was not remembered for 2 s

    asyncio.run(run())


def test_a_known_keys_hash_is_remembered_and_a_revocation_still_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Authenticating a cached key skips hashing it again, and only keys that were found are
    remembered; a key revoked after that is refused at its next call all the same."""
    from unigate.auth.authenticate import authenticate
    from unigate.auth.keys import generate_key, hash_key
    from unigate.edge.asgi import Request
    from unigate.errors import AuthenticationFailed

    key = generate_key()
    hashed: list[str] = []

    class Store:
        record = _principal()

        async def by_hash(self, key_hash: str) -> Principal | None:
            return self.record if key_hash == hash_key(key) else None

    def request(presented: str) -> Request:
        scope = {
            "method": "POST",
            "path": "/v1/x",
            "headers": [(b"authorization", f"Bearer {presented}".encode())],
        }
        return Request(scope, _nothing, _nothing, "r")

    async def run() -> None:
        store = Store()
        cache = KeyCache(cast(KeyStore, store))
        first = await authenticate(request(key), cache)
        assert first.key_id == "key_1"
        with pytest.raises(AuthenticationFailed):
            await authenticate(request(generate_key()), cache)  # well formed, unknown

        def counted(presented: str) -> str:
            hashed.append(presented)
            return hash_key(presented)

        monkeypatch.setattr("unigate.auth.cache.hash_key", counted)
        for _ in range(3):
            assert await authenticate(request(key), cache) is first
        assert hashed == [key]  # hashed once more, when the cache first found it
        store.record = _principal(revoked_at=1.0)
        cache.invalidate(hash_key(key))
        with pytest.raises(AuthenticationFailed, match="revoked"):
            await authenticate(request(key), cache)

    asyncio.run(run())


async def _nothing(*args: object) -> None:
    raise AssertionError("authentication reads nothing from the client")


def test_calls_arriving_while_a_key_is_read_share_the_read() -> None:
    """A burst of calls with a key not cached yet (a worker's first second) waits for one
    database read; one caller leaving does not cancel it for the others."""

    async def run() -> None:
        store = SlowStore(_principal())
        cache = KeyCache(cast(KeyStore, store))
        calls = [asyncio.create_task(cache.lookup("h")) for _ in range(32)]
        await _started(store)
        calls[0].cancel()  # its client left
        store.release.set()
        answers = await asyncio.gather(*calls[1:])
        assert store.reads == 1
        assert all(answer is not None and answer.key_id == "key_1" for answer in answers)
        assert calls[0].cancelled() and cache.peek("h") is answers[0]

    asyncio.run(run())


def test_a_failed_read_fails_every_waiting_call_and_the_next_call_reads_again() -> None:
    async def run() -> None:
        store = SlowStore(_principal())
        cache = KeyCache(cast(KeyStore, store))
        failing = True

        async def by_hash(key_hash: str) -> Principal | None:
            store.reads += 1
            await store.release.wait()
            if failing:
                raise OSError("database away")
            return store.record

        store.by_hash = by_hash  # type: ignore[method-assign]
        calls = [asyncio.create_task(cache.lookup("h")) for _ in range(3)]
        await _started(store)
        store.release.set()
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert [type(r) for r in results] == [OSError] * 3 and store.reads == 1
        failing = False
        assert await cache.lookup("h") is not None and store.reads == 2

    asyncio.run(run())
