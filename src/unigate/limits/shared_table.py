"""Counters shared by every worker process of one `unigate serve`, in a memory-mapped file.

Workers are separate processes, so per-process counters would let N workers admit N times a
limit. A file in the data directory, mapped by every worker and updated under one lock across
them (table_lock.py: a named semaphore taken in user space, recovered from a holder that dies),
makes each decision atomic: lock, a few 8-byte reads and writes, unlock, about a microsecond,
with no extra process and no network round trip.

Layout: a 64-byte header (magic, slot count, the lock's holder, which lock), then fixed 48-byte
slots in an open-addressing table keyed by a 16-byte digest of the counter's name: `=16sddqq` =
digest, two floats, two integers, whose meaning the caller gives (a rate counter's arrival
time; a budget's spent amount, period and seeded flag). Slots are never freed; a full table is
logged and its new counters are not enforced rather than refusing traffic. A `serve` of one
worker keeps the same layout in anonymous memory (`MemoryTable`), without the file or the lock.

The whole file is allocated (`disk.allocate`) before it is mapped, ~3 MB of disk: a first
store into a page of a sparse file that the filesystem then has no block for is a SIGBUS, which
would kill a worker at a new key's first limited call once the disk is full. `unigate serve`
creates the table before its workers start, so no space for it is a start-up error.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import mmap
import os
import struct
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import TracebackType

from unigate.data_dir.disk import allocate
from unigate.limits.table_lock import (
    FLOCK,
    SEMAPHORE,
    FileLock,
    SemaphoreLock,
    TableLock,
    create_semaphore,
    remove_semaphore,
    semaphore_name,
)

log = logging.getLogger("unigate.limits")

_MAGIC = b"UGLIMIT1"
_HEADER = struct.Struct("<8sQ")
_HEADER_SIZE = 64
# Header cells (8 bytes each, in `ints`) after the magic and the slot count: the pid holding
# the lock, and which lock the table's processes take (`SEMAPHORE` or `FLOCK`).
_HOLDER_CELL, _KIND_CELL = 2, 3
_KIND = struct.Struct("=q")
# Native byte order, as the 8-byte cells (memoryview casts) read the same values.
_SLOT = struct.Struct("=16sddqq")
_VALUES = struct.Struct("=ddqq")  # a slot after its digest
_PROBES = 64
EMPTY = b"\0" * 16

Slot = tuple[float, float, int, int]


class _Layout:
    """The slots over a mapped buffer (a file shared by the workers, or anonymous memory for one
    worker): the name index, and each slot's values as struct records (`read`, `write`) and as
    8-byte cells (`floats`, `ints`: one value read or written by one C-level subscript, what the
    one-call admission in key_slots.py uses)."""

    def __init__(self, buffer: mmap.mmap, slots: int, label: str) -> None:
        self._map = buffer
        self.slots = slots
        self._label = label
        self.floats = memoryview(buffer).cast("d")
        self.ints = memoryview(buffer).cast("q")
        self._index: dict[str, int] = {}  # name -> slot offset, once found
        self._full_logged = False

    def offset(self, name: str, claim: bool = True) -> int:
        """The slot of `name` (claimed if new; call locked then), or -1 when the table is full
        or, with `claim=False`, when `name` has no slot yet."""
        found = self._index.get(name)
        if found is not None:
            return found
        digest = hashlib.blake2b(name.encode(), digest_size=16).digest()
        start = int.from_bytes(digest[:8], "little") % self.slots
        for probe in range(_PROBES):
            off = _HEADER_SIZE + ((start + probe) % self.slots) * _SLOT.size
            held = self._map[off : off + 16]
            if held == digest:
                break
            if held == EMPTY:
                if not claim:
                    return -1
                _SLOT.pack_into(self._map, off, digest, 0.0, 0.0, 0, 0)
                break
        else:
            if not self._full_logged:
                self._full_logged = True
                log.error("the %s is full; new counters are not enforced", self._label)
            return -1
        if len(self._index) < 100_000:
            self._index[name] = off
        return off

    @staticmethod
    def cell(off: int) -> int:
        """The index in `floats` and `ints` of slot `off`'s first value (the next three follow)."""
        return (off + 16) >> 3

    def read(self, off: int) -> Slot:
        values: Slot = _VALUES.unpack_from(self._map, off + 16)
        return values

    def write(self, off: int, a: float, b: float, c: int, d: int) -> None:
        _VALUES.pack_into(self._map, off + 16, a, b, c, d)

    def close(self) -> None:
        # The cells are views of the map, which cannot close while they are held.
        self.floats.release()
        self.ints.release()
        self._map.close()


def _size(slots: int) -> int:
    return _HEADER_SIZE + slots * _SLOT.size


class SharedTable(_Layout):
    locking = True  # every process that maps the file takes the lock
    # The lock's own bound methods, called directly on the hot path (no frame of this class's).
    lock: Callable[[], None]
    unlock: Callable[[], None]

    def __init__(self, path: Path, slots: int = 1 << 16) -> None:
        self.path = path
        size = _size(slots)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        name = semaphore_name(path)
        fcntl.flock(self._fd, fcntl.LOCK_EX)  # one process at a time sets up or opens the table
        try:
            if os.fstat(self._fd).st_size != size or os.pread(self._fd, 8, 0) != _MAGIC:
                # New, or left by another layout: start empty, every block allocated. A table
                # another process created is left alone: it was allocated with it.
                os.ftruncate(self._fd, 0)
                self._allocate(size)
                os.pwrite(self._fd, _HEADER.pack(_MAGIC, slots), 0)
                kind = SEMAPHORE if create_semaphore(name) else FLOCK
                os.pwrite(self._fd, _KIND.pack(kind), _KIND_CELL * 8)
            super().__init__(mmap.mmap(self._fd, size), slots, f"shared limit table {path}")
            self._lock = self._open_lock(name)
        except BaseException:
            os.close(self._fd)  # which drops the flock too
            raise
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.lock, self.unlock = self._lock.lock, self._lock.unlock
        # Built once: a `with` on a reusable object costs no allocation.
        self._locked = _Locked(self._lock)

    def _open_lock(self, name: str) -> TableLock:
        """The lock the table's creator chose (called under the file's flock)."""
        if self.ints[_KIND_CELL] != SEMAPHORE:
            return FileLock(self._fd)
        try:
            return SemaphoreLock(name, self._fd, self.ints, _HOLDER_CELL)
        except FileNotFoundError:
            # Removed under a running serve (someone cleaned /dev/shm): a new one keeps limits
            # working, though workers still holding the old one are not excluded from this one.
            log.warning("the limits table's semaphore %s was removed; it is created again", name)
            if not create_semaphore(name):
                raise
            return SemaphoreLock(name, self._fd, self.ints, _HOLDER_CELL)

    def _allocate(self, size: int) -> None:
        try:
            allocate(self._fd, 0, size)
        except OSError as exc:
            raise NoRoomForTable(self.path, size, exc) from exc

    @staticmethod
    def remove(path: Path) -> None:
        """Forget every counter (a new `serve` starts from its database's figures)."""
        path.unlink(missing_ok=True)
        remove_semaphore(semaphore_name(path))

    def locked(self) -> AbstractContextManager[object]:
        """Exclusive access across processes."""
        return self._locked

    def close(self) -> None:
        super().close()
        os.close(self._fd)


class NoRoomForTable(Exception):
    """The filesystem would not allocate the table's blocks (full, or over a quota)."""

    def __init__(self, path: Path, size: int, cause: OSError) -> None:
        self.path = path
        self.size = size
        self.reason = cause.strerror or str(cause)
        super().__init__(f"cannot allocate {size} bytes for the limits table {path}: {self.reason}")


class _Locked:
    """The table's lock held for a `with` block; a class rather than a generator-based context
    manager, which costs a generator and several frames per use."""

    __slots__ = ("_lock",)

    def __init__(self, lock: TableLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.lock()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._lock.unlock()


class MemoryTable(_Layout):
    """`SharedTable`'s layout in anonymous memory, for a `serve` of one worker: the same
    counters without the file or the lock (pages are only backed once a slot is used)."""

    locking = False

    def __init__(self, slots: int = 1 << 16) -> None:
        super().__init__(mmap.mmap(-1, _size(slots)), slots, "limit table in memory")
        self._unlocked = nullcontext(self)  # reusable: a settlement allocates no context

    def lock(self) -> None:
        pass

    def unlock(self) -> None:
        pass

    def locked(self) -> AbstractContextManager[object]:
        return self._unlocked
