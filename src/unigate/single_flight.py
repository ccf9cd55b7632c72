"""One call at a time per key: calls that ask for the same thing while it is being read wait for
that read instead of each starting their own (a burst of first calls after a start, all missing
the same cache entry, was one database read per connection, queued behind each other).

    reads = SingleFlight[str, Principal | None]()
    principal = await reads.run(key_hash, lambda: store.by_hash(key_hash))

The read runs as its own task and each caller awaits it shielded: a caller that leaves (its
client gone) does not cancel the read for the others. A read that fails fails every caller
waiting for it; the next call reads again. `forget` drops a read under way from sharing (what
it returns may predate a change): calls from then on start a new one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SingleFlight(Generic[K, V]):
    __slots__ = ("_running",)

    def __init__(self) -> None:
        self._running: dict[K, asyncio.Future[V]] = {}

    async def run(self, key: K, read: Callable[[], Awaitable[V]]) -> V:
        running = self._running.get(key)
        if running is None:
            running = self._running[key] = asyncio.ensure_future(read())
            running.add_done_callback(lambda done: self._done(key, done))
        return await asyncio.shield(running)

    def forget(self, key: K | None = None) -> None:
        """Stop sharing the read of `key` under way (of every key without one)."""
        if key is None:
            self._running.clear()
        else:
            self._running.pop(key, None)

    def _done(self, key: K, done: asyncio.Future[V]) -> None:
        if self._running.get(key) is done:
            del self._running[key]
        if not done.cancelled():
            done.exception()  # retrieved: raised to each waiting caller, if any is left
