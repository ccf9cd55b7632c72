"""In-process key cache: the request hot path reads keys from here and never waits on the
database for a known key. Invalidation: at once for a change made by this worker (the admin API
calls `invalidate`), and for changes made anywhere else (CLI, other workers, other replicas)
when the change feed says so (cluster/fanout.py calls `invalidate`: within a second through
Redis, or at its next check of the database)."""

from __future__ import annotations

import logging
import time
from typing import Final

from unigate.auth.keys import hash_key
from unigate.auth.principal import Principal
from unigate.single_flight import SingleFlight
from unigate.store.keys import KeyStore

log: Final = logging.getLogger("unigate.auth")

_NEGATIVE_TTL: Final = 2.0
_MAX_NEGATIVE: Final = 10_000
_MAX_HASHES: Final = 10_000


class KeyCache:
    def __init__(self, store: KeyStore) -> None:
        self._store = store
        self._known: dict[str, Principal] = {}
        self._unknown: dict[str, float] = {}  # hash -> time until which a miss is remembered
        # Bumped by every invalidation: a lookup whose database read overlapped one does not
        # cache what it read (it may predate the change, and nothing would evict it later).
        self._generation = 0
        # Presented key -> its hash, for keys found in the cache: hashing is most of what
        # authenticating a known key costs. Only keys that were valid get in, so guesses
        # cannot fill it; a pure function of the key, so invalidations need not touch it.
        self._hashes: dict[str, str] = {}
        # A key's first burst of calls (a worker's first second) is one database read.
        self._reads = SingleFlight[str, Principal | None]()

    def peek(self, key_hash: str) -> Principal | None:
        """Cache-only lookup: the hot path for every known key."""
        return self._known.get(key_hash)

    def peek_key(self, key: str) -> tuple[str, Principal | None]:
        """A presented key's hash and its cached principal (None: not in the cache)."""
        key_hash = self._hashes.get(key)
        if key_hash is not None:
            return key_hash, self._known.get(key_hash)
        key_hash = hash_key(key)
        principal = self._known.get(key_hash)
        if principal is not None:
            if len(self._hashes) >= _MAX_HASHES:
                self._hashes.clear()
            self._hashes[key] = key_hash
        return key_hash, principal

    async def lookup(self, key_hash: str) -> Principal | None:
        found = self._known.get(key_hash)
        if found is not None:
            return found
        if self._unknown.get(key_hash, 0.0) > time.monotonic():
            return None
        generation = self._generation
        return await self._reads.run(key_hash, lambda: self._read(key_hash, generation))

    async def _read(self, key_hash: str, generation: int) -> Principal | None:
        """The database's record, cached unless an invalidation came after the lookup asked."""
        found = await self._store.by_hash(key_hash)
        if generation != self._generation:
            return found  # the waiting calls' answer; the next lookup reads again
        if found is None:
            if len(self._unknown) >= _MAX_NEGATIVE:
                self._unknown.clear()
            self._unknown[key_hash] = time.monotonic() + _NEGATIVE_TTL
            return None
        self._known[key_hash] = found
        return found

    def invalidate(self, key_hash: str) -> None:
        self._generation += 1
        self._known.pop(key_hash, None)
        self._unknown.pop(key_hash, None)
        self._reads.forget(key_hash)  # a read under way may predate the change: not joined

    def forget_misses(self) -> None:
        """A key was just created here: make sure an earlier miss is not remembered."""
        self._generation += 1
        self._unknown.clear()
        self._reads.forget()
