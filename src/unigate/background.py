"""Periodic background work that stops cooperatively.

A loop is never cancelled in the middle of a step: a task cancelled while awaiting a SQLite
write leaves that connection's write lock held until the connection is collected, and every
other writer (the final usage flush, lease release) then waits out the busy timeout and fails.
`stop()` asks the loop to finish its current step and waits for it; only a step that overruns
`grace` seconds is cancelled.

A step that fails is retried at the next interval. The first failure of a run of them is logged
(one line for an outage such as a full disk or a database that is away, with the traceback for
anything else), the rest are not, and the step that works again says so: a full disk costs one
line per loop, not one a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from unigate.data_dir.disk import disk_failed
from unigate.store.db import failure_reason, is_outage

log = logging.getLogger("unigate")

Step = Callable[[], Awaitable[float | None]]  # returns the delay before the next step (None: default)


class Periodic:
    def __init__(self, name: str, step: Step, interval: float, grace: float = 10.0) -> None:
        self.name = name
        self._step = step
        self._interval = interval
        self._grace = grace
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        if self._task is None:
            return
        self._stopping.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), self._grace)
        except TimeoutError:
            log.warning("%s did not stop within %.0f s; cancelling it", self.name, self._grace)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None

    async def _run(self) -> None:
        failed = 0  # steps failed in a row
        while not self._stopping.is_set():
            try:
                delay = await self._step()
            except Exception as exc:  # the loop must outlive any one failure
                if not failed:
                    self._report(exc)
                failed += 1
                delay = None
            else:
                if failed:
                    log.warning("%s: working again after %d failed attempt(s)", self.name, failed)
                    failed = 0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self._interval if delay is None else delay)

    def _report(self, exc: Exception) -> None:
        if is_outage(exc) or disk_failed(exc):
            log.warning(
                "%s: %s; retried every %.2g s, logged again once it works",
                self.name, failure_reason(exc), self._interval,
            )  # fmt: skip
        else:
            log.exception("%s step failed; retried, logged again once it works", self.name)
