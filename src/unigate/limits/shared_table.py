"""Counters shared by every worker process of one `unigate serve`, in a memory-mapped file.

Workers are separate processes, so per-process counters would let N workers admit N times a
limit. A file in the data directory, mapped by every worker and updated under an exclusive
`flock`, makes each decision atomic across them: one lock, a few struct reads and writes, one
unlock, about 2-3 µs, with no extra process and no network round trip. The kernel drops the
lock of a process that dies holding it.

Layout: a 64-byte header (magic, slot count), then fixed 48-byte slots in an open-addressing
table keyed by a 16-byte digest of the counter's name: `<16s d d q q>` = digest, two floats,
two integers, whose meaning the caller gives (a rate counter's arrival time; a budget's spent
amount, period and seeded flag). Slots are never freed; a full table is logged and its new
counters are not enforced rather than refusing traffic.

The whole file is allocated (`disk.allocate`) before it is mapped, ~3 MB of disk: a first
store into a page of a sparse file that the filesystem then has no block for is a SIGBUS, which
would kill a worker at a new key's first limited call once the disk is full. `unigate serve`
creates the table before its workers start, so no space for it is a start-up error.
"""

from __future__ import annotations

import fcntl
import functools
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

log = logging.getLogger("unigate.limits")

_MAGIC = b"UGLIMIT1"
_HEADER = struct.Struct("<8sQ")
_HEADER_SIZE = 64
_SLOT = struct.Struct("<16sddqq")
_VALUES = struct.Struct("<ddqq")  # a slot after its digest
_PROBES = 64
EMPTY = b"\0" * 16

Slot = tuple[float, float, int, int]


class SharedTable:
    locking = True  # every process that maps the file takes the lock

    def __init__(self, path: Path, slots: int = 1 << 16) -> None:
        self.path = path
        self.slots = slots
        size = _HEADER_SIZE + slots * _SLOT.size
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            if os.fstat(self._fd).st_size != size or os.pread(self._fd, 8, 0) != _MAGIC:
                # New, or left by another layout: start empty, every block allocated. A table
                # another process created is left alone: it was allocated with it.
                os.ftruncate(self._fd, 0)
                self._allocate(size)
                os.pwrite(self._fd, _HEADER.pack(_MAGIC, slots), 0)
        except BaseException:
            os.close(self._fd)  # which drops the lock too
            raise
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._map = mmap.mmap(self._fd, size)
        # A slot's values by their byte offset (`at`), as C calls: the one-call admission
        # (key_slots.py) reads and writes through these without a Python frame each.
        self.get: Callable[[int], Slot] = functools.partial(_VALUES.unpack_from, self._map)
        self.put: Callable[[int, float, float, int, int], None] = functools.partial(
            _VALUES.pack_into, self._map
        )
        # Built once: a `with` on a reusable object costs no allocation.
        self._lock = _Locked(self._fd)
        self._index: dict[str, int] = {}  # name -> slot offset, once found
        self._full_logged = False

    def _allocate(self, size: int) -> None:
        try:
            allocate(self._fd, 0, size)
        except OSError as exc:
            raise NoRoomForTable(self.path, size, exc) from exc

    @staticmethod
    def remove(path: Path) -> None:
        """Forget every counter (a new `serve` starts from its database's figures)."""
        path.unlink(missing_ok=True)

    def lock(self) -> None:
        """Take the lock: the hot path's form of `locked`, with no context-manager frames."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def unlock(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def locked(self) -> AbstractContextManager[object]:
        """Exclusive access across processes."""
        return self._lock

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
                log.error("the shared limit table %s is full; new counters are not enforced", self.path)
            return -1
        if len(self._index) < 100_000:
            self._index[name] = off
        return off

    @staticmethod
    def at(off: int) -> int:
        """The byte offset of slot `off`'s values, for `get` and `put`."""
        return off + 16

    def read(self, off: int) -> Slot:
        values: Slot = _VALUES.unpack_from(self._map, off + 16)
        return values

    def write(self, off: int, a: float, b: float, c: int, d: int) -> None:
        _VALUES.pack_into(self._map, off + 16, a, b, c, d)

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)


class NoRoomForTable(Exception):
    """The filesystem would not allocate the table's blocks (full, or over a quota)."""

    def __init__(self, path: Path, size: int, cause: OSError) -> None:
        self.path = path
        self.size = size
        self.reason = cause.strerror or str(cause)
        super().__init__(f"cannot allocate {size} bytes for the limits table {path}: {self.reason}")


class _Locked:
    """`flock` held for a `with` block; a class rather than a generator-based context manager,
    which costs a generator and several frames per request."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)


class MemoryTable:
    """`SharedTable`'s interface over plain Python objects, for a `serve` of one worker: the
    same counters without the file, the struct packing or the lock (~2 µs less per limited
    request)."""

    locking = False

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self._values: list[Slot] = []
        self._unlocked = nullcontext(self)  # reusable: a settlement allocates no context
        self.get: Callable[[int], Slot] = self._values.__getitem__  # a C call, as SharedTable's
        self.put = self.write

    def lock(self) -> None:
        pass

    def unlock(self) -> None:
        pass

    def locked(self) -> AbstractContextManager[object]:
        return self._unlocked

    def offset(self, name: str, claim: bool = True) -> int:
        found = self._index.get(name)
        if found is None:
            if not claim:
                return -1
            found = self._index[name] = len(self._values)
            self._values.append((0.0, 0.0, 0, 0))
        return found

    @staticmethod
    def at(off: int) -> int:
        """Where `get` and `put` find slot `off`: at its index."""
        return off

    def read(self, off: int) -> Slot:
        return self._values[off]

    def write(self, off: int, a: float, b: float, c: int, d: int) -> None:
        self._values[off] = (a, b, c, d)

    def close(self) -> None:
        self._values.clear()
