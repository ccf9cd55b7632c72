"""The embedded default: objects are files under the data dir, at the paths a single machine
always used (`<data dir>/media/<name>`, `<data dir>/sandbox/inputs/<name>`).

Every file system call runs in a worker thread (a slow or busy disk must not stall the event
loop). Writes go to a hidden temporary name first and are renamed into place, so a reader sees
the old file or the new one, never a part. Several workers or replicas on one machine sharing
a data dir see each other's files, which is all `shared = False` means here: separate
machines do not.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import AsyncIterable
from pathlib import Path
from typing import IO

from unigate.edge.media_types import SNIFF_BYTES
from unigate.errors import StorageUnavailable
from unigate.storage.base import CHUNK, StoredObject, check_key, no_chunks

log = logging.getLogger("unigate.storage")


class LocalStorage:
    shared = False

    def __init__(self, root: Path) -> None:
        self.root = root

    def describe(self) -> str:
        return f"local disk ({self.root})"

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    async def check(self) -> None:
        """The data dir is checked by `unigate serve` itself (cli/startup.py)."""

    async def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        try:
            await asyncio.to_thread(_write, path, data)
        except OSError as exc:  # disk full, permissions: the store failed, not the request
            log.warning("cannot write %s: %s", path, exc.strerror or exc)
            raise StorageUnavailable(exc.strerror or str(exc)) from None

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> None:
        path = self._path(key)
        try:
            f, tmp = await asyncio.to_thread(_create_temp, path)
        except OSError as exc:
            log.warning("cannot write %s: %s", path, exc.strerror or exc)
            raise StorageUnavailable(exc.strerror or str(exc)) from None
        try:
            try:
                async for chunk in chunks:
                    await asyncio.to_thread(f.write, chunk)
                await asyncio.to_thread(_finish, f, tmp, path)
            except OSError as exc:
                log.warning("cannot write %s: %s", path, exc.strerror or exc)
                raise StorageUnavailable(exc.strerror or str(exc)) from None
        except BaseException:
            await asyncio.to_thread(_discard, f, tmp)
            raise

    async def read(self, key: str) -> bytes | None:
        try:
            return await asyncio.to_thread(self._path(key).read_bytes)
        except OSError:  # gone, a directory, unreadable: absent all the same
            return None

    async def open(self, key: str, head_only: bool = False) -> StoredObject | None:
        try:
            f, size, head = await asyncio.to_thread(_open, self._path(key), head_only)
        except OSError:
            return None
        if head_only or len(head) >= size:
            await asyncio.to_thread(f.close)
            return StoredObject(size, head, no_chunks())
        return StoredObject(size, head, _Chunks(f))

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self._path(key).is_file)

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._path(key).unlink, missing_ok=True)

    async def delete_prefix(self, prefix: str) -> None:
        folder, _, start = check_key(prefix).rpartition("/")
        await asyncio.to_thread(_delete, self.root / folder if folder else self.root, start)

    async def aclose(self) -> None:
        return None


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name of its own per write (two replicas may render the same job at once), hidden by
    # its leading dot: /media/ never serves a name that starts with one.
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _create_temp(path: Path) -> tuple[IO[bytes], Path]:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")  # hidden, as in `_write`
    return tmp.open("wb"), tmp


def _finish(f: IO[bytes], tmp: Path, path: Path) -> None:
    f.close()
    tmp.replace(path)


def _discard(f: IO[bytes], tmp: Path) -> None:
    f.close()
    tmp.unlink(missing_ok=True)


def _open(path: Path, head_only: bool) -> tuple[IO[bytes], int, bytes]:
    f = path.open("rb")
    try:
        size = os.fstat(f.fileno()).st_size
        head = f.read(SNIFF_BYTES if head_only else CHUNK)
    except BaseException:
        f.close()
        raise
    return f, size, head


class _Chunks:
    """The rest of an open file in CHUNK pieces. `aclose` closes the file even when no chunk
    was read: an async generator's `finally` would only run once it had started."""

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        if self._f.closed:
            raise StopAsyncIteration
        chunk = await asyncio.to_thread(self._f.read, CHUNK)
        if not chunk:
            await self.aclose()
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        if not self._f.closed:
            await asyncio.to_thread(self._f.close)


def _delete(folder: Path, start: str) -> None:
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.name.startswith(start) and path.is_file():
            path.unlink(missing_ok=True)
