"""The file service: what the Files API's routers and the batch engine call.

A file's bytes are streamed into the file store (`storage/`, the data dir or a bucket) as they
arrive, never held whole: chunks are gathered to `WRITE_BYTES` and written, so memory stays
flat whatever the size. The size limit (`files.max_bytes`) and the owner's stored-bytes quota
(`limits.stored_bytes_per_key`, `store/key_storage.py`) are checked while the bytes flow; a
refused or broken upload leaves no object behind. Only once the object is complete is its row
committed, in one transaction with the key's stored bytes, so a file that is listed can be read.

Expiry: a file whose `expires_at` has passed is a 404 at once; `FileExpiry` removes its row
and object later (see expiry.py)."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass

from unigate.errors import InvalidRequest, NotFound, PayloadTooLarge, StorageQuotaExceeded
from unigate.files.model import DAY, DEFAULT_EXPIRY, PROCESSED, PURPOSES, UPLOAD_PURPOSES, StoredFile
from unigate.files.store import FileStore, Page
from unigate.storage import Storage, StoredObject, file_key
from unigate.store.key_storage import QUOTA_KEY, held

log = logging.getLogger("unigate.files")

# Bytes gathered before one write to the store: few thread hops per upload, little memory.
WRITE_BYTES = 1024 * 1024
NOT_FOUND = "No such file: {id}."
MAX_FILENAME = 1024


@dataclass(frozen=True, slots=True)
class FileLimits:
    """Read at each upload, so a config reload applies them."""

    max_bytes: int  # one file's size
    quota: int  # the owner key's stored bytes (0: no quota)
    retention_days: float  # default expiry for purposes without one of their own (0: kept)


def new_file_id() -> str:
    return "file-" + secrets.token_hex(12)


@dataclass(slots=True)
class Staged:
    """An object written to the store under a new file id, not yet a file (no row)."""

    id: str
    owner: str
    bytes: int
    created: float


class _Counted:
    """The upload's chunks, gathered into writes, refused past the size limit or the quota."""

    def __init__(
        self, chunks: AsyncIterable[bytes], max_bytes: int | None, room: int | None, used: int, quota: int
    ) -> None:
        self._chunks = chunks
        self._max = max_bytes
        self._room = room  # bytes the quota leaves; None: no quota
        self._used, self._quota = used, quota
        self.size = 0

    async def __call__(self) -> AsyncIterator[bytes]:
        pending = bytearray()
        async for chunk in self._chunks:
            self.size += len(chunk)
            if self._max is not None and self.size > self._max:
                raise PayloadTooLarge(f"The file exceeds the limit of {self._max} bytes (files.max_bytes).")
            if self._room is not None and self.size > self._room:
                raise StorageQuotaExceeded(
                    f"This API key holds {self._used} bytes of stored state; its quota is {self._quota} "
                    f"bytes ({QUOTA_KEY}), and this file would exceed it. Delete files or stored "
                    "responses first."
                )
            pending += chunk
            if len(pending) >= WRITE_BYTES:
                yield bytes(pending)
                pending.clear()
        if pending:
            yield bytes(pending)


class FileService:
    def __init__(self, store: FileStore, storage: Storage, limits: Callable[[], FileLimits]) -> None:
        self.store = store
        self.storage = storage
        self._limits = limits

    # --- writing -------------------------------------------------------------------------

    async def create(
        self,
        owner: str,
        purpose: str,
        filename: str,
        chunks: AsyncIterable[bytes],
        expires_at: int | None = None,
    ) -> StoredFile:
        """Stream `chunks` into a new file of `owner`'s; `expires_at` None: the purpose's
        default expiry (see `default_expiry`)."""
        check_purpose(purpose, PURPOSES)
        check_filename(filename)
        # `files.max_bytes` and the quota refuse what clients upload. The gateway's own outputs
        # (a batch's results) are bounded by what made them and count in the quota without being
        # refused by it: work already done and paid for is never thrown away (as a stored
        # response, a key can exceed its quota by one such output).
        staged = await self.stage(owner, chunks, upload=purpose in UPLOAD_PURPOSES)
        return await self.commit(staged, purpose, filename, expires_at)

    async def precheck(self, owner: str) -> None:
        """Refuse an upload at once when the key's quota is already spent."""
        limits = self._limits()
        if limits.quota and await held(self.store.engine, owner) >= limits.quota:
            raise StorageQuotaExceeded(
                f"This API key has used its quota of {limits.quota} bytes of stored state ({QUOTA_KEY}). "
                "Delete files or stored responses first."
            )

    async def stage(self, owner: str, chunks: AsyncIterable[bytes], upload: bool = True) -> Staged:
        """Write the bytes under a new id; an upload's refusal (`files.max_bytes`, the quota) or
        a failure leaves nothing."""
        limits = self._limits()
        checked = upload and limits.quota > 0
        used = await held(self.store.engine, owner) if checked else 0
        room = limits.quota - used if checked else None
        counted = _Counted(chunks, limits.max_bytes if upload else None, room, used, limits.quota)
        file_id = new_file_id()
        created = time.time()
        await self.storage.put_stream(file_key(file_id), counted())
        return Staged(file_id, owner, counted.size, created)

    async def commit(
        self, staged: Staged, purpose: str, filename: str, expires_at: int | None = None
    ) -> StoredFile:
        """The staged object becomes a file: its row and the owner's stored bytes, together."""
        created = int(staged.created)
        if expires_at is None:
            expires_at = self.default_expiry(purpose, created)
        f = StoredFile(
            staged.id, staged.owner, purpose, filename, staged.bytes, created, expires_at, PROCESSED
        )
        try:
            await self.store.insert(f, staged.created)
        except BaseException:
            await self.discard(staged)
            raise
        return f

    async def discard(self, staged: Staged) -> None:
        """Remove a staged object that will not become a file (the form was refused after it)."""
        try:
            await self.storage.delete(file_key(staged.id))
        except Exception:  # the upload's own error is what the client needs; this one is logged
            log.warning("could not remove the refused upload %s from the file store", staged.id)

    def default_expiry(self, purpose: str, created: int) -> int | None:
        seconds = DEFAULT_EXPIRY.get(purpose)
        if seconds is None:
            days = self._limits().retention_days
            seconds = int(days * DAY) if days > 0 else None
        return None if seconds is None else created + seconds

    # --- reading -------------------------------------------------------------------------

    async def get(self, owner: str, file_id: str) -> StoredFile:
        found = await self.store.get(owner, file_id, time.time())
        if found is None:
            raise NotFound(NOT_FOUND.format(id=file_id), param="file_id", code="file_not_found")
        return found

    async def page(
        self, owner: str, *, purpose: str | None, after: str | None, limit: int, newest_first: bool
    ) -> Page:
        return await self.store.page(
            owner, time.time(), purpose=purpose, after=after, limit=limit, newest_first=newest_first
        )

    async def open(self, f: StoredFile) -> StoredObject:
        """The file's object, opened for streaming (its size, its first bytes, the rest)."""
        opened = await self.storage.open(file_key(f.id))
        if opened is None:  # the row outlived its object (removed by hand): gone all the same
            raise NotFound(NOT_FOUND.format(id=f.id), param="file_id", code="file_not_found")
        return opened

    async def read(self, owner_file: StoredFile) -> AsyncIterator[bytes]:
        """The file's bytes as stored, in chunks."""
        opened = await self.open(owner_file)
        try:
            if opened.head:
                yield opened.head
            async for chunk in opened.rest:
                yield chunk
        finally:
            await opened.close()

    async def lines(self, f: StoredFile) -> AsyncIterator[bytes]:
        """The file's content split on b"\\n" (without it; a last line without one included),
        streamed: one line at a time is held, plus one chunk."""
        rest = b""
        async for chunk in self.read(f):
            parts = (rest + chunk).split(b"\n")
            rest = parts.pop()
            for line in parts:
                yield line
        if rest:
            yield rest

    # --- removing ------------------------------------------------------------------------

    async def delete(self, owner: str, file_id: str) -> None:
        if not await self.store.delete(owner, file_id, time.time()):
            raise NotFound(NOT_FOUND.format(id=file_id), param="file_id", code="file_not_found")
        await self._remove_object(file_id)

    async def purge_expired(self, batch: int = 500) -> int:
        """Remove expired files (rows, bytes counted, objects); how many."""
        removed = 0
        while True:
            found = await self.store.expired(time.time(), batch)
            for f in await self.store.remove(found):
                await self._remove_object(f.id)
                removed += 1
            if len(found) < batch:
                return removed

    async def _remove_object(self, file_id: str) -> None:
        # The row is gone and the bytes given back: an object a store failure leaves behind is
        # only disk space, logged, never a file a client can see again.
        try:
            await self.storage.delete(file_key(file_id))
        except Exception:
            log.warning("could not remove the deleted file %s from the file store", file_id)


def check_purpose(purpose: str, accepted: tuple[str, ...]) -> None:
    if purpose not in accepted:
        raise InvalidRequest(
            f"Invalid purpose {purpose[:64]!r}: expected one of {', '.join(accepted)}.",
            param="purpose",
            code="invalid_value",
        )


def check_filename(filename: str) -> None:
    if not filename or len(filename) > MAX_FILENAME or "\x00" in filename:
        raise InvalidRequest(
            f"The file's name must be 1 to {MAX_FILENAME} characters without NUL.",
            param="file",
            code="invalid_value",
        )
