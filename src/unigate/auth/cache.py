"""In-process key cache: the request hot path reads keys from here and never waits on the
database for a known key. Invalidation: immediately on a local revoke, and within
`poll_interval` for revokes made by other processes (CLI, other workers, other replicas)
through the `key_events` change feed."""

from __future__ import annotations

import logging
import time

from unigate.auth.principal import Principal
from unigate.background import Periodic
from unigate.store.keys import KeyStore

log = logging.getLogger("unigate.auth")

_NEGATIVE_TTL = 2.0
_MAX_NEGATIVE = 10_000


class KeyCache:
    def __init__(self, store: KeyStore, poll_interval: float = 0.5) -> None:
        self._store = store
        self._known: dict[str, Principal] = {}
        self._unknown: dict[str, float] = {}  # hash -> time until which a miss is remembered
        self._seq = 0
        self._loop = Periodic("key-cache-watch", self._poll, poll_interval)

    def peek(self, key_hash: str) -> Principal | None:
        """Cache-only lookup: the hot path for every known key."""
        return self._known.get(key_hash)

    async def lookup(self, key_hash: str) -> Principal | None:
        found = self._known.get(key_hash)
        if found is not None:
            return found
        now = time.monotonic()
        if self._unknown.get(key_hash, 0.0) > now:
            return None
        found = await self._store.by_hash(key_hash)
        if found is None:
            if len(self._unknown) >= _MAX_NEGATIVE:
                self._unknown.clear()
            self._unknown[key_hash] = now + _NEGATIVE_TTL
            return None
        self._known[key_hash] = found
        return found

    def invalidate(self, key_hash: str) -> None:
        self._known.pop(key_hash, None)
        self._unknown.pop(key_hash, None)

    def forget_misses(self) -> None:
        """A key was just created here: make sure an earlier miss is not remembered."""
        self._unknown.clear()

    async def start(self) -> None:
        self._seq = await self._store.latest_change()
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    async def refresh(self) -> None:
        self._seq, hashes = await self._store.changes_since(self._seq)
        for key_hash in hashes:
            self.invalidate(key_hash)

    async def _poll(self) -> None:
        await self.refresh()
