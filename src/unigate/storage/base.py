"""The one interface to the files the gateway keeps itself: media it serves under `/media/`
(sandbox results, uploads, stored images), the sandbox's job inputs and, on a shared store, the
sandbox's job records.

Two backends implement it: `local.py`, the data dir's disk (the embedded default, exactly the
paths a single machine always used), and `s3.py`, an S3-compatible bucket every replica sees.
Callers name objects by key, a relative path such as `media/img-….png`; the helpers below build
the keys, so no caller spells a folder name. Names in keys come from the gateway itself (random
ids) or have passed `/media/`'s name check, never a client's raw path.

Failures are mapped once, in each backend: a missing object is `None` (or `False`), anything
else the store cannot do is `StorageUnavailable` (503 at the edge, its reason logged by the
backend). Reads for serving stream: `open` returns the first bytes (what the content check
needs) and an async iterator over the rest, so a large file never sits whole in memory.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Protocol

MEDIA = "media/"  # served at /media/{name}
INPUTS = "sandbox/inputs/"  # a sandbox job's input files, kept until it renders
RECORDS = "sandbox/"  # + "jobs/" or "tasks/": a shared store's sandbox job records
FILES = "files/"  # the Files API's uploads and the batch engine's output files
# Bytes per chunk when streaming a stored file: big enough that a 100 MB video costs a few
# hundred reads, small enough that a slow client holds little of it in memory.
CHUNK = 256 * 1024


def media_key(name: str) -> str:
    """The key of a file served at `/media/{name}`."""
    return MEDIA + name


async def keep_image(storage: Storage, image: bytes, fmt: str) -> str:
    """Store an image the gateway made or drew (`fmt`: png, jpeg, webp) for `/media/`; its path,
    an unguessable name the link's holder may fetch."""
    name = f"img-{secrets.token_hex(12)}.{'jpg' if fmt == 'jpeg' else fmt}"
    await storage.put(media_key(name), image)
    return f"/media/{name}"


def input_key(name: str) -> str:
    """The key of a sandbox job's input file."""
    return INPUTS + name


def record_key(area: str, job_id: str) -> str:
    """The key of a sandbox job record (`area`: `jobs` for music, `tasks` for the others)."""
    return f"{RECORDS}{area}/{job_id}.json"


def file_key(file_id: str) -> str:
    """The key of a file of the Files API (`file-…`, an id the gateway made)."""
    return FILES + file_id


def check_key(key: str) -> str:
    """`key` if it is a relative path without `.`/`..` parts; ValueError otherwise. The keys
    are built by the helpers above, so this is a guard against a bug, not against clients."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a storage key: {key!r}")
    return key


async def no_chunks() -> AsyncIterator[bytes]:
    """An object with nothing after its head."""
    nothing: tuple[bytes, ...] = ()
    for chunk in nothing:
        yield chunk


@dataclass(slots=True)
class StoredObject:
    """An object opened for serving: its size, its first bytes and the rest as chunks.

    `head` holds at least the first `SNIFF_BYTES` (all of a smaller object); for a head-only
    open it may be all there is. `rest` yields the bytes after `head`, in order; `close` ends
    the read early (the client left), releasing the file or the connection."""

    size: int
    head: bytes
    rest: AsyncIterator[bytes]

    @classmethod
    def whole(cls, data: bytes) -> StoredObject:
        return cls(len(data), data, no_chunks())

    async def close(self) -> None:
        aclose = getattr(self.rest, "aclose", None)
        if aclose is not None:
            await aclose()


class Storage(Protocol):
    """What every backend offers. All methods may raise `StorageUnavailable`."""

    # True when every replica sees the same objects (S3): then the sandbox keeps its job
    # records here too, instead of in the data dir's journal files.
    shared: bool

    def describe(self) -> str:
        """Where objects live, for start-up lines and errors (never a credential)."""
        ...

    async def check(self) -> None:
        """Reachable, and objects can be written: raises `StorageUnavailable` saying why."""
        ...

    async def put(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing any object there; readers see the old object
        or the new one, never a part."""
        ...

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> None:
        """Store the bytes `chunks` yields under `key`, as they come (a large upload is never
        whole in memory); readers see the object only once it is complete. An exception from
        `chunks` propagates and nothing is stored."""
        ...

    async def read(self, key: str) -> bytes | None:
        """The whole object (inputs, clips: files the sandbox works on), or None if absent."""
        ...

    async def open(self, key: str, head_only: bool = False) -> StoredObject | None:
        """The object for serving (see `StoredObject`), or None if absent. With `head_only`
        only its size and first bytes are fetched (HEAD requests)."""
        ...

    async def exists(self, key: str) -> bool: ...

    async def delete(self, key: str) -> None:
        """Remove the object `key` (nothing to remove is fine)."""
        ...

    async def delete_prefix(self, prefix: str) -> None:
        """Remove every object whose key starts with `prefix` (a deleted job's files)."""
        ...

    async def aclose(self) -> None: ...
