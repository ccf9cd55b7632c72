"""The periodic purge of stored responses older than `responses.retention_days`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from unigate.background import Periodic
from unigate.responses.store import ResponseStore

log = logging.getLogger("unigate.responses")

DAY = 86400.0


class Retention:
    """Every `interval` seconds, deletes what is older than the retention period. The period is
    read at each pass (a config reload applies it); 0 keeps responses forever. Every worker
    runs it: a second purge finds nothing left, and each batch is a short transaction."""

    def __init__(self, store: ResponseStore, days: Callable[[], float], interval: float = 3600.0) -> None:
        self.store = store
        self._days = days
        self._loop = Periodic("responses-retention", self._step, interval)

    async def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    async def _step(self) -> None:
        days = self._days()
        if days <= 0:
            return
        removed = await self.store.purge(time.time() - days * DAY)
        if removed:
            log.info("deleted %d stored responses older than %g days", removed, days)
