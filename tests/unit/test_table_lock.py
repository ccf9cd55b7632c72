"""The shared limits table's lock across processes: a named semaphore, taken over from a holder
that died in it, waited for while its holder lives, and flock where there are no semaphores."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from unigate.limits import table_lock
from unigate.limits.backend import Demand, LocalCounters
from unigate.limits.shared_table import SharedTable
from unigate.limits.table_lock import FileLock, SemaphoreLock, semaphore_name

HOLD = """
    import sys, time
    from pathlib import Path
    from unigate.limits.shared_table import SharedTable
    table = SharedTable(Path(sys.argv[1]))
    table.lock()
    if sys.argv[2] == "no-pid":  # as if killed between taking the semaphore and writing its pid
        table.ints[2] = 0
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "limits.bin"
    SharedTable.remove(tmp_path / "limits.bin")


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_lock, "STALE_AFTER", 0.1)


def _holder(path: Path, how: str = "pid") -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLD), str(path), how], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    with proc.stdout:
        assert proc.stdout.readline() == "held\n"
    return proc


def test_the_table_takes_a_named_semaphore_and_remove_deletes_it(path: Path) -> None:
    table = SharedTable(path)
    assert isinstance(table._lock, SemaphoreLock)
    shm = Path("/dev/shm") / ("sem." + semaphore_name(path).lstrip("/"))
    assert shm.exists()
    table.lock()
    assert table.ints[2] == os.getpid(), "the holder's pid is in the header while it holds"
    table.unlock()
    assert table.ints[2] == 0
    table.close()
    SharedTable.remove(path)
    assert not shm.exists() and not path.exists()


def test_a_holder_killed_in_the_lock_is_taken_over(
    path: Path, quick: None, caplog: pytest.LogCaptureFixture
) -> None:
    table = SharedTable(path)
    proc = _holder(path)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, "unigate.limits"):
        table.lock()
    assert time.monotonic() - started < 2.0
    assert table.ints[2] == os.getpid()
    assert f"held by process {proc.pid}, which no longer runs" in caplog.text
    table.unlock()
    # Taken over once: from here on it is an ordinary lock again, free when released.
    table.lock()
    table.unlock()
    table.close()


def test_a_holder_that_died_before_writing_its_pid_is_taken_over_after_a_second_wait(
    path: Path, quick: None, caplog: pytest.LogCaptureFixture
) -> None:
    table = SharedTable(path)
    proc = _holder(path, "no-pid")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with caplog.at_level(logging.ERROR, "unigate.limits"):
        table.lock()
    assert "held by a process that no longer runs" in caplog.text
    table.unlock()
    table.close()


def test_a_live_holder_is_waited_for_even_when_stopped(path: Path, quick: None) -> None:
    table = SharedTable(path)
    lock = table._lock
    assert isinstance(lock, SemaphoreLock)
    proc = _holder(path)
    try:
        proc.send_signal(signal.SIGSTOP)
        # A stale wait has passed; the holder still runs (stopped), so nothing is taken over.
        assert not lock._take_over()
        assert table.ints[2] == proc.pid
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait()
    table.lock()  # its holder gone, the lock is taken over
    assert table.ints[2] == os.getpid()
    table.unlock()
    table.close()


def test_without_named_semaphores_the_table_uses_flock_in_every_process(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.import_module

    def without_semaphores(name: str, package: str | None = None) -> ModuleType:
        if name == "_multiprocessing":
            raise ImportError("no _multiprocessing")
        return real(name, package)

    # The platform's module, refused where the lock module imports it (a patch of the lock
    # module's own function would not reach its compiled callers).
    monkeypatch.setattr(importlib, "import_module", without_semaphores)
    table = SharedTable(path)
    assert isinstance(table._lock, FileLock)
    assert table.ints[3] == table_lock.FLOCK
    monkeypatch.undo()
    # A process that has semaphores follows the table's record, so all take the same lock.
    other = SharedTable(path)
    assert isinstance(other._lock, FileLock)
    counters = LocalCounters(path)
    assert counters.take_now([Demand("key:f:rpm", "rate", 1, 1)], 10.0) is None
    assert counters.take_now([Demand("key:f:rpm", "rate", 1, 1)], 10.0) is not None
    for each in (table, other):
        each.close()
    counters.close()


def test_a_zombie_does_not_run() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{proc.pid}/stat").read_bytes().split(b") ")[1][:1] != b"Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not table_lock._running(proc.pid)
    proc.wait()
    assert not table_lock._running(proc.pid)
    assert table_lock._running(os.getpid())
