"""The read and total timeouts of a pool's responses in flight, kept by one timer per pool.

A timer per response was the largest single cost of an upstream call: under uvloop, arming
and cancelling one costs ~10 µs of CPU on the benchmark machine (`loop.call_at` + `cancel`),
more than the gateway's own layers. Here a response in flight is a dict entry; one sweep,
scheduled for the earliest moment any of them could time out, checks them all, times out
what is due and schedules itself for the next. With one provider's timeouts (every response
of a pool has the same `read` and `total`), a response added later is due later, so steady
traffic arms about one timer per `read` seconds, not one per request. A response's progress
(`Response.last`) moves its due time later without touching the timer: the sweep finds it
not yet due and looks again when it is. Timeouts stay exact (the sweep runs when the earliest
is due), give or take the loop's own latency.
"""

from __future__ import annotations

import asyncio
from typing import Protocol


class Timed(Protocol):
    """What the sweep asks of a response in flight."""

    def due(self) -> float:
        """Loop time at which it times out, as things stand."""
        ...

    def time_out(self, now: float) -> None:
        """Fail it: `now` is at or past `due()`."""
        ...


class Deadlines:
    """One pool's responses in flight and the one timer that watches them."""

    __slots__ = ("_at", "_live", "_loop", "_timer")

    def __init__(self) -> None:
        self._live: dict[Timed, None] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._at = float("inf")  # when the timer fires; inf when none is armed

    def add(self, response: Timed, due: float, loop: asyncio.AbstractEventLoop) -> None:
        self._live[response] = None
        if due < self._at:  # the first in flight, or one due sooner than any before
            self._arm(due, loop)

    def discard(self, response: Timed) -> None:
        # The timer is left armed: it finds nothing due and stops, or re-arms for the rest.
        self._live.pop(response, None)

    def __len__(self) -> int:
        return len(self._live)

    def _arm(self, at: float, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._loop = loop
        self._at = at
        self._timer = loop.call_at(at, self._sweep)

    def _sweep(self) -> None:
        self._timer = None
        self._at = float("inf")
        loop = self._loop
        if loop is None or not self._live:
            return
        now = loop.time()
        soonest = float("inf")
        for response in list(self._live):
            due = response.due()
            if due <= now:
                self._live.pop(response, None)
                response.time_out(now)
            elif due < soonest:
                soonest = due
        if self._live and soonest < self._at:
            self._arm(soonest, loop)
