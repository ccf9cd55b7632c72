"""Group commit: rows that arrive together share one transaction (task submits; stored
Responses, `responses/store.py`).

Each caller still waits until its own row is committed before it answers (a 200 is never
given for a task or a stored response that is not durable), but with SQLite's single writer
one commit per call would cap throughput at the commit rate; one commit per batch does not,
and the batch shares the transaction's thread hand-offs too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

log = logging.getLogger("unigate.tasks")

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class BatchStore(Protocol[T_contra]):
    async def insert_batch(self, items: Sequence[T_contra], /) -> None: ...


class GroupCommit(Generic[T]):
    def __init__(
        self, store: BatchStore[T], max_batch: int = 256, what: str = "task", log_failures: bool = True
    ) -> None:
        self._store = store
        self._max_batch = max_batch
        self._what = what  # names the rows in the task's name and in log lines
        self._log_failures = log_failures  # False: the callers log what they are raised
        self._pending: list[tuple[T, asyncio.Future[None]]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    async def insert(self, item: T) -> None:
        """Returns once `item` is committed; raises if its batch failed."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._stopping:
            await self._flush()  # the loop is gone: written now
        elif self._task is None:
            await self.start()  # a writer nobody started (used outside the gateway's lifecycle)
        self._wake.set()
        await future

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"{self._what}-group-commit")

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
                        self._fail(future, single)
                    else:
                        _done(future)
                return
            self._fail(batch[0][1], exc)
            return
        for _, future in batch:
            _done(future)

    def _fail(self, future: asyncio.Future[None], exc: BaseException) -> None:
        if not future.done():
            if self._log_failures:
                log.error("%s insert failed: %s", self._what, type(exc).__name__)
            future.set_exception(exc)


def _done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
