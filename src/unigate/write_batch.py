"""Socket writes held until the end of the event loop's turn, then made together.

    writes = WriteBatch.of(loop)      # one per event loop, shared by the server and the client
    writes.later(transport, data)     # a reply, an upstream request: written after this turn
    writes.now(transport, data)       # written at once, after whatever is held (order kept)
    writes.close(transport)           # what is held goes first, then the close

Why: a write to a local socket wakes the process reading it, and the kernel mostly hands that
process the writer's CPU at once, so a worker that wrote each reply and each upstream request
as it was ready was preempted more than once per request (`nonvoluntary_ctxt_switches`: 1.3-1.4
per request at 64 connections; the bare proxy's 1.6-1.8), and each preemption cost the worker
~15 µs, far more than the switch itself, since its Python work resumes cold. Held to the end of
the turn, a worker runs the Python of every request that turn brought, then makes the turn's
writes one after the other: on the benchmark's machine 93.8 -> 76.1 µs of CPU per request and
15,400 -> 20,300 requests a second (docs/benchmarks.md). The writes are the same system calls.

What it costs: a held write waits for the rest of the turn's callbacks (the Python of the other
requests ready at the same moment, a fraction of a millisecond when the worker is saturated),
and holding takes the loop one more turn. With nothing to share the turn with, that turn is pure
cost (one connection: 4,200 -> 3,600 requests a second), so the server tells the batch its
requests under way (`in_flight`) and a write is held only while two or more are. A write that
would hold more than `MAX_HELD` bytes is made at once, with what was held before it, so a large
or streamed body is bounded and meets the transport's flow control as it always did. Order is
kept per transport and across transports: `now` and `close` write what is held first. A
transport closed meanwhile (the peer left, the call was cancelled and its connection aborted)
gets nothing, as an aborted one would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sized
from typing import Any, Final

MAX_HELD: Final = 256 * 1024  # bytes held per turn before a write is made at once
_ATTRIBUTE: Final = "_unigate_writes"  # where a loop keeps its batch

log: Final = logging.getLogger("unigate")


class WriteBatch:
    """The held writes of one event loop (not thread-safe: used from its loop only)."""

    __slots__ = ("_held", "_loop", "_scheduled", "_size", "in_flight")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._held: list[tuple[Any, bytes]] = []
        self._size = 0
        self._scheduled = False
        # The server's requests under way (its task set): fewer than two, and a write is made
        # at once. None (no server on this loop: a command, a test): every write is held.
        self.in_flight: Sized | None = None

    @staticmethod
    def of(loop: asyncio.AbstractEventLoop) -> WriteBatch:
        """The loop's batch: kept on the loop itself, so the server's connections and the
        upstream client's, built apart, hold their writes in the same list and one flush
        makes them all (two batches would flush at two points of the next turn)."""
        batch: WriteBatch | None = getattr(loop, _ATTRIBUTE, None)
        if batch is None:
            batch = WriteBatch(loop)
            # A loop without attributes gets a batch per caller: still correct, less batched.
            with contextlib.suppress(AttributeError):
                setattr(loop, _ATTRIBUTE, batch)
        return batch

    def later(self, transport: Any, data: bytes) -> None:
        """Write `data` at the end of this turn (at once when that would hold too much, or when
        no other request is under way to share the turn's writes)."""
        size = self._size + len(data)
        in_flight = self.in_flight
        if size > MAX_HELD or (in_flight is not None and len(in_flight) < 2):
            self.now(transport, data)
            return
        self._held.append((transport, data))
        self._size = size
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._turn_ended)

    def now(self, transport: Any, data: bytes) -> None:
        """Write `data` at once, after what is held."""
        if self._held:
            self.flush()
        transport.write(data)

    def close(self, transport: Any) -> None:
        """Close `transport` gracefully once what is held is written."""
        if self._held:
            self.flush()
        transport.close()

    def flush(self) -> None:
        """Make every held write, in the order they were asked for."""
        held = self._held
        if not held:
            return
        self._held = []
        self._size = 0
        for transport, data in held:
            if transport.is_closing():
                continue
            try:
                transport.write(data)
            except Exception:  # one transport's failure must not cost the others their writes
                log.exception("a held write failed; its connection is dropped")
                transport.abort()

    def _turn_ended(self) -> None:
        self._scheduled = False
        self.flush()
