"""Batched writes that run one at a time and outlive a cancelled caller.

The usage recorder and the request log take their rows out of memory and then write them. A
caller cancelled during that write (a shutdown past its grace cancels the flushing loop; a
client that leaves a budget check) used to cancel the write with it, and the rows it held were
neither written nor put back. Here each write is a task of its own that holds the lock while it
runs, and the caller awaits it shielded: cancelling the caller leaves the write to commit (or to
fail and put its rows back), and the next write (the final flush at shutdown) starts only once it
has. The same pattern as a connection's close in `store/aio.py`, except that the cancelled caller
need not wait: the lock, not the caller, orders the writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class SerialWrites:
    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        # The loop keeps only weak references to tasks: one whose caller was cancelled would
        # otherwise be nobody's and could be collected mid-write.
        self._running: set[asyncio.Task[Any]] = set()

    @property
    def busy(self) -> bool:
        """A write runs (or waits for the lock)."""
        return bool(self._running)

    async def run(self, write: Callable[[], Awaitable[T]]) -> T:
        """`write()` once every earlier write has ended, in a task the caller's cancellation does
        not reach; its result or error is the caller's."""
        task = asyncio.ensure_future(self._locked(write))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        # A caller cancelled here leaves the task running; `shield` marks its outcome as
        # retrieved, and a failed write has put its rows back for the next one.
        return await asyncio.shield(task)

    async def _locked(self, write: Callable[[], Awaitable[T]]) -> T:
        async with self._lock:
            return await write()
