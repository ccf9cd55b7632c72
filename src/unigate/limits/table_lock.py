"""The lock that makes each decision on the shared limits table atomic across the workers of one
`unigate serve` (shared_table.py), taken twice per limited request (admission, settlement).

**A POSIX semaphore named after the table file**, opened by every process that maps the table.
Uncontended, taking and releasing it are two atomic instructions in user space (~0.1 µs for the
pair here) where `flock` is two system calls (~1.5 µs, and more under load): with two workers,
about 3 µs of every limited request's ~20. Contended, a waiter spins briefly (a decision takes
about a microsecond) and then sleeps on the semaphore.

The kernel drops the `flock` of a process that dies, but not a semaphore: a worker killed while
it holds one would stop every other worker's limited calls. So the holder writes its pid into
the table's header while it holds the lock, and a waiter that has waited `STALE_AFTER` seconds
looks: if that process no longer runs (or died before writing its pid, and the lock stays held
for another `STALE_AFTER`), the waiter takes the hold over (logged), under the file's `flock` so
that only one waiter can. A holder that runs but is stopped (a debugger) is waited for.

Where the platform has no named semaphores (no `/dev/shm`), `FileLock` (`flock`) is the lock;
the table's creator records which one in the header, so every process of a serve takes the same.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import logging
import os
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("unigate.limits")

STALE_AFTER = 0.5  # seconds: a decision takes microseconds, so a lock held this long is suspect
_SPINS = 64  # tries before sleeping on a contended lock: about a decision's length
SEMAPHORE, FLOCK = 1, 2  # the header's record of which lock the table's processes take


class TableLock(Protocol):
    def lock(self) -> None: ...

    def unlock(self) -> None: ...


class FileLock:
    """`flock` on the table file: the fallback, and the guard of a semaphore's take-over."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def lock(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def unlock(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)


def semaphore_name(path: Path) -> str:
    """The semaphore of the table at `path` (one per data directory, so one per serve)."""
    digest = hashlib.blake2b(str(path.resolve()).encode(), digest_size=10).hexdigest()
    return f"/unigate-limits-{digest}"


def _semaphores() -> Any:
    """CPython's POSIX semaphore type (what `multiprocessing.Lock` is built on), which opens a
    semaphore by name; its module has no type stubs."""
    return importlib.import_module("_multiprocessing")


def create_semaphore(name: str) -> bool:
    """A fresh semaphore (one holder at a time, free) under `name`, replacing any left by an
    earlier serve; False where the platform has none."""
    try:
        module = _semaphores()
        remove_semaphore(name)
        module.SemLock(1, 1, 1, name, False)  # kind 1: a semaphore; value 1, at most 1
    except (ImportError, AttributeError, OSError, ValueError) as exc:
        log.warning("no named semaphores here (%s): the limits table is locked with flock, slower", exc)
        return False
    return True


def remove_semaphore(name: str) -> None:
    with contextlib.suppress(ImportError, AttributeError, OSError):  # none, or none left
        _semaphores().sem_unlink(name)


class SemaphoreLock:
    """The named semaphore, with its holder's pid in `ints[holder_cell]` (the table header)."""

    __slots__ = ("_acquire", "_fd", "_holder", "_ints", "_pid", "_release", "_semaphore")

    def __init__(self, name: str, fd: int, ints: memoryview, holder_cell: int) -> None:
        self._semaphore = _semaphores().SemLock._rebuild(0, 1, 1, name)  # opened by name
        self._acquire = self._semaphore.acquire
        self._release = self._semaphore.release
        self._fd = fd
        self._ints = ints
        self._holder = holder_cell
        self._pid = os.getpid()  # a table is opened by the process that uses it, never inherited

    def lock(self) -> None:
        if not self._acquire(False):
            self._wait()
        self._ints[self._holder] = self._pid

    def unlock(self) -> None:
        self._ints[self._holder] = 0
        self._release()

    def _wait(self) -> None:
        acquire = self._acquire
        for _ in range(_SPINS):
            if acquire(False):
                return
        while not acquire(True, STALE_AFTER):
            if self._take_over():
                return

    def _take_over(self) -> bool:
        """After `STALE_AFTER` of waiting: True when this process now holds the lock, either
        freed meanwhile or taken over from a holder that no longer runs."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)  # one waiter at a time judges and takes over
        try:
            holder = self._ints[self._holder]
            if holder and _running(holder):
                return False
            # Gone, or died between taking the lock and writing its pid (a live process writes
            # it within microseconds): held for another full wait, it is abandoned.
            if self._acquire(True, STALE_AFTER):
                return True
            if self._ints[self._holder] != holder:
                return False
            who = f"process {holder}, which no longer runs" if holder else "a process that no longer runs"
            log.error("the limits table's lock was held by %s; this worker takes it over", who)
            return True  # the semaphore stays taken: its hold is now this process's
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)


def _running(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")
