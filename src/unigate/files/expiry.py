"""The periodic purge of expired files, on the same `Periodic` loop as the responses' retention
(responses/retention.py): every worker runs it, a second purge finds nothing left, and each
batch is a short transaction. An expired file is already a 404 to every reader; this removes
its row and object and gives its bytes back to the key's quota."""

from __future__ import annotations

import logging

from unigate.background import Periodic
from unigate.files.service import FileService

log = logging.getLogger("unigate.files")


class FileExpiry:
    def __init__(self, service: FileService, interval: float = 300.0) -> None:
        self.service = service
        self._loop = Periodic("files-expiry", self._step, interval)

    async def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    async def _step(self) -> None:
        removed = await self.service.purge_expired()
        if removed:
            log.info("deleted %d expired files", removed)
