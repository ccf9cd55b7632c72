"""Group commit for task inserts: submits that arrive together share one transaction.

Each submit still waits until its own row is committed before it answers (a 200 is never
given for a task that is not durable), but with SQLite's single writer one commit per
submit would cap throughput at the commit rate; one commit per batch does not.
"""

from __future__ import annotations

import asyncio
import logging

from unigate.tasks.store import NewTask, TaskStore

log = logging.getLogger("unigate.tasks")


class GroupCommit:
    def __init__(self, store: TaskStore, max_batch: int = 256) -> None:
        self._store = store
        self._max_batch = max_batch
        self._pending: list[tuple[NewTask, asyncio.Future[None]]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    async def insert(self, item: NewTask) -> None:
        """Returns once `item` is committed; raises if its batch failed."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        self._wake.set()
        await future

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="task-group-commit")

    async def stop(self) -> None:
        # Cooperative: the loop finishes the batch in flight (never cancelled mid-commit).
        self._stopping = True
        self._wake.set()
        if self._task:
            await self._task
        while self._pending:
            await self._flush()

    async def _run(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                await self._flush()

    async def _flush(self) -> None:
        batch, self._pending = self._pending[: self._max_batch], self._pending[self._max_batch :]
        try:
            await self._store.insert_batch([item for item, _ in batch])
        except Exception as exc:
            if len(batch) > 1:
                # One bad row must not fail its neighbours: retry them one by one.
                for item, future in batch:
                    try:
                        await self._store.insert_batch([item])
                    except Exception as single:
                        _fail(future, single)
                    else:
                        _done(future)
                return
            _fail(batch[0][1], exc)
            return
        for _, future in batch:
            _done(future)


def _done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _fail(future: asyncio.Future[None], exc: BaseException) -> None:
    if not future.done():
        log.error("task insert failed: %s", type(exc).__name__)
        future.set_exception(exc)
