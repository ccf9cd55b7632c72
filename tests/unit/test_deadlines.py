"""The pool's one timer for its responses' timeouts (transport/deadlines.py): armed for the
earliest due, not once per response; progress defers a timeout without re-arming; what is due
times out at its due time and nothing earlier."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

from unigate.transport.deadlines import Deadlines


class FakeTimer:
    def __init__(self, at: float, callback: Callable[[], None]) -> None:
        self.at = at
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeLoop:
    """A clock moved by hand and the timers armed on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[FakeTimer] = []

    def time(self) -> float:
        return self.now

    def call_at(self, at: float, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer(at, callback)
        self.timers.append(timer)
        return timer

    def run_until(self, when: float) -> None:
        """Fire every armed timer due by `when`, in order, moving the clock to each."""
        while True:
            live = [t for t in self.timers if not t.cancelled and t.at <= when]
            if not live:
                break
            timer = min(live, key=lambda t: t.at)
            self.timers.remove(timer)
            self.now = max(self.now, timer.at)
            timer.callback()
        self.now = when

    def armed(self) -> list[FakeTimer]:
        return [t for t in self.timers if not t.cancelled]


class Call:
    """A response in flight: silent since `last`, times out `read` s after it."""

    def __init__(self, loop: FakeLoop, read: float, total: float) -> None:
        self.loop = loop
        self.read = read
        self.deadline = loop.now + total
        self.last = loop.now
        self.timed_out_at: float | None = None

    def due(self) -> float:
        return min(self.deadline, self.last + self.read)

    def time_out(self, now: float) -> None:
        self.timed_out_at = now


def _add(deadlines: Deadlines, loop: FakeLoop, call: Call) -> None:
    deadlines.add(call, call.due(), cast(asyncio.AbstractEventLoop, cast(Any, loop)))


def test_responses_with_the_same_timeouts_share_one_timer() -> None:
    loop, deadlines = FakeLoop(), Deadlines()
    calls = []
    for i in range(100):
        loop.now = i * 0.001
        call = Call(loop, read=10.0, total=60.0)
        _add(deadlines, loop, call)
        calls.append(call)
    assert len(loop.timers) == 1  # armed for the first; every later one is due later
    for call in calls[:99]:
        deadlines.discard(call)
    loop.run_until(10.0)  # the first's due: it is gone, the last is re-armed for
    assert [t.at for t in loop.armed()] == [calls[99].due()]
    loop.run_until(10.099)
    assert calls[99].timed_out_at == 10.099
    assert not loop.armed() and len(deadlines) == 0
    assert all(call.timed_out_at is None for call in calls[:99])


def test_progress_moves_a_timeout_later_without_rearming_per_chunk() -> None:
    loop, deadlines = FakeLoop(), Deadlines()
    call = Call(loop, read=1.0, total=100.0)
    _add(deadlines, loop, call)
    for step in range(1, 30):  # a byte every 0.5 s: never a second of silence
        loop.run_until(step * 0.5)
        call.last = loop.now
    assert call.timed_out_at is None
    assert len(loop.timers) <= 16  # one sweep per second of progress at most, not per chunk
    loop.run_until(16.0)
    assert call.timed_out_at == 15.5  # 1 s after its last byte (14.5), exactly


def test_the_total_deadline_ends_a_response_that_keeps_sending() -> None:
    loop, deadlines = FakeLoop(), Deadlines()
    call = Call(loop, read=1.0, total=3.0)
    _add(deadlines, loop, call)
    for step in range(1, 20):
        loop.run_until(step * 0.25)
        if call.timed_out_at is not None:
            break
        call.last = loop.now
    assert call.timed_out_at == 3.0


def test_a_response_due_sooner_than_the_armed_timer_rearms_it() -> None:
    loop, deadlines = FakeLoop(), Deadlines()
    slow = Call(loop, read=30.0, total=60.0)
    _add(deadlines, loop, slow)
    quick = Call(loop, read=0.2, total=60.0)
    _add(deadlines, loop, quick)
    assert [t.at for t in loop.armed()] == [0.2]
    loop.run_until(0.2)
    assert quick.timed_out_at == 0.2 and slow.timed_out_at is None
    assert [t.at for t in loop.armed()] == [30.0]


def test_a_finished_response_never_times_out() -> None:
    loop, deadlines = FakeLoop(), Deadlines()
    call = Call(loop, read=1.0, total=5.0)
    _add(deadlines, loop, call)
    deadlines.discard(call)
    loop.run_until(10.0)
    assert call.timed_out_at is None and not loop.armed()
