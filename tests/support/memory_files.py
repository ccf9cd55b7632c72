"""An in-memory stand-in for the gateway's file service (`Gateway.files`), with the same
methods the batch engine calls, for tests of batches on a gateway built without one."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from unigate.errors import NotFound


@dataclass(frozen=True, slots=True)
class MemoryFile:
    id: str
    owner: str
    purpose: str
    filename: str
    bytes: int
    created_at: int
    expires_at: int | None = None
    status: str = "processed"


@dataclass
class MemoryFiles:
    files: dict[str, tuple[MemoryFile, bytes]] = field(default_factory=dict)

    def put(self, owner: str, content: bytes, purpose: str = "batch", filename: str = "input.jsonl") -> str:
        found = MemoryFile(
            "file-" + secrets.token_hex(12), owner, purpose, filename, len(content), int(time.time())
        )
        self.files[found.id] = (found, content)
        return found.id

    def content(self, owner: str, file_id: str) -> bytes:
        found, data = self.files[file_id]
        assert found.owner == owner
        return data

    async def create(
        self,
        owner: str,
        purpose: str,
        filename: str,
        chunks: AsyncIterable[bytes],
        expires_at: int | None = None,
    ) -> MemoryFile:
        data = b"".join([chunk async for chunk in chunks])
        file_id = self.put(owner, data, purpose, filename)
        return self.files[file_id][0]

    async def get(self, owner: str, file_id: str) -> MemoryFile:
        found = self.files.get(file_id)
        if found is None or found[0].owner != owner:
            raise NotFound(f"No such File object: {file_id}", param="id")
        return found[0]

    async def lines(self, f: Any) -> AsyncIterator[bytes]:
        for line in self.files[f.id][1].split(b"\n"):
            yield line
