"""Cancel an upstream call whose client has left, for calls that answer in one piece.

A stream notices a departed client on its next write (api/serving/relay.py watches for it); a
non-streaming call would keep the upstream generating, and billing, until the answer is
complete. Watching `receive()` for `http.disconnect` needs a task per request, and even a
per-request timer costs ~9 µs under uvloop (a libuv timer each), more than a third of the
gateway's own work. So a call in flight is only registered (a dict entry tagged with the current
sweep number); one sweep every WATCH_AFTER seconds, scheduled while any call is in flight,
starts a watcher for each call registered before the previous sweep. Short calls pay a dict
insert and delete; long generations (the ones worth cancelling) are cancelled within about two
sweeps of the client leaving.

    token = watch.enter(request.receive)
    try:
        await work
    except asyncio.CancelledError:
        if watch.left(token): raise ClientDisconnected   # ours: the client is gone
        raise
    finally:
        watch.exit(token)
"""

from __future__ import annotations

import asyncio
from threading import get_ident
from typing import Final

from unigate.edge.asgi import Receive

WATCH_AFTER: Final = 0.5  # seconds


class _Call:
    """A call old enough to be watched (made by the sweep that starts its watcher)."""

    __slots__ = ("left", "receive", "watcher")

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.left = False
        self.watcher: asyncio.Task[None] | None = None


# A call in flight, as `enter` registers it: its `receive` and the sweep count when it
# started. A tuple, not a `_Call`: most calls end before any sweep, and a tuple costs no
# object construction per request.
_Entered = tuple[Receive, int]


class LeaveWatch:
    """Per process (held by the routed request path); see the module docstring."""

    def __init__(self, after: float = WATCH_AFTER) -> None:
        self.after = after
        self._calls: dict[asyncio.Task[object], _Call | _Entered] = {}
        self._sweeps = 0
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the last call
        self._thread_id = 0  # and the thread it ran in

    def enter(self, receive: Receive) -> asyncio.Task[object]:
        # With the loop given, `current_task` is a dict lookup; without, it asks for the running
        # loop, a getpid system call on CPython 3.11. The loop is remembered with its thread: in
        # that thread a task stepping under it is the caller's; another loop since (tests run
        # several in turn) finds none there and is looked up the long way.
        thread = get_ident()
        task = asyncio.current_task(self._loop) if thread == self._thread_id else None
        if task is None:
            self._loop, self._thread_id = asyncio.get_running_loop(), thread
            task = asyncio.current_task(self._loop)
        assert task is not None
        self._calls[task] = (receive, self._sweeps)
        if not self._scheduled:
            self._scheduled = True
            task.get_loop().call_later(self.after, self._sweep)
        return task

    def left(self, task: asyncio.Task[object]) -> bool:
        """After a CancelledError: True when it was this watch's doing (the client left);
        the task's cancellation is then withdrawn so the request can end as a 499."""
        call = self._calls.get(task)
        if isinstance(call, _Call) and call.left:
            task.uncancel()
            return True
        return False

    def exit(self, task: asyncio.Task[object]) -> None:
        call = self._calls.pop(task)
        if isinstance(call, _Call) and call.watcher is not None:
            call.watcher.cancel()

    def _sweep(self) -> None:
        self._scheduled = False
        if not self._calls:
            return
        loop = asyncio.get_running_loop()
        earlier = self._sweeps
        self._sweeps += 1
        # Started before the previous sweep: running for at least one full interval.
        due = [
            (task, entry[0])
            for task, entry in self._calls.items()
            if type(entry) is tuple and entry[1] < earlier
        ]
        for task, receive in due:
            call = self._calls[task] = _Call(receive)
            call.watcher = loop.create_task(_watch(task, call))
        self._scheduled = True
        loop.call_later(self.after, self._sweep)


async def _watch(task: asyncio.Task[object], call: _Call) -> None:
    message = await call.receive()
    # The body was read already, so the next message is the disconnect; anything else
    # (a server that answers differently) ends the watch without cancelling.
    if message["type"] == "http.disconnect":
        call.left = True
        task.cancel()
