"""What the batch engine uses of the file service (`Gateway.files`, `unigate.files.service`):
an OpenAI batch's input is one of the key's files and its results are written as files."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Protocol


class StoredFileLike(Protocol):
    id: str
    owner: str
    purpose: str
    bytes: int


class FileServiceLike(Protocol):
    async def create(
        self,
        owner: str,
        purpose: str,
        filename: str,
        chunks: AsyncIterable[bytes],
        expires_at: int | None = None,
    ) -> Any: ...

    async def get(self, owner: str, file_id: str) -> Any: ...

    def lines(self, f: Any) -> AsyncIterator[bytes]: ...


def file_service(gw: object) -> FileServiceLike | None:
    """The gateway's file service; None on a gateway built without one."""
    found: FileServiceLike | None = getattr(gw, "files", None)
    return found
