"""A full disk never kills the process and costs no data that memory can hold.

The memory-mapped files (metrics values, the shared limits table) get their blocks before they
are mapped, so a full filesystem is an OSError where a store into a sparse page would have been
a SIGBUS: checked on a real, full tmpfs in a private mount namespace, and with the allocation
refused, for what the files do then (scratch slots, a start-up error). The writers off the
request path keep what a full SQLite database refused (SQLITE_FULL, made real with
`max_page_count`) and write it once there is room, with one log line per outage; the request
path maps disk errors to 503s."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import sqlite3
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from prometheus_client.mmap_dict import MmapedDict

from tests.support.tiny_disk import require_namespaces, run_python_on_tiny_disk
from tests.unit.test_observability import _samples
from unigate.app import _unexpected
from unigate.cli.startup import StartupError, create_limits_table
from unigate.data_dir.disk import allocate
from unigate.edge.access_log import finished
from unigate.edge.asgi import Request
from unigate.errors import DatabaseUnavailable, GatewayError, StorageUnavailable
from unigate.limits.shared_table import NoRoomForTable, SharedTable
from unigate.observability import values
from unigate.observability.metrics import Metrics
from unigate.observability.values import SCRATCH, ValueFile
from unigate.store import db
from unigate.usage.recorder import UsageRecord, UsageRecorder
from unigate.usage.request_log import RequestLog
from unigate_sandbox.journal import JobJournal

ENOSPC = OSError(errno.ENOSPC, "No space left on device")


# --------------------------------------------------------------- a real full tmpfs (no SIGBUS)


def _run(code: str, tmp_path: Path, size: str) -> str:
    require_namespaces()
    done = run_python_on_tiny_disk(textwrap.dedent(code), tmp_path / "disk", size)
    # A SIGBUS is returncode -7: the process killed, as a gateway worker was.
    assert done.returncode == 0, f"returncode {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_value_files_on_a_full_tmpfs_take_no_signal(tmp_path: Path) -> None:
    out = _run(
        """
        import json
        from pathlib import Path
        from prometheus_client.mmap_dict import MmapedDict
        from tests.support.tiny_disk import fill
        from unigate.observability import values
        from unigate.observability.values import SCRATCH, ValueFile

        values._RETRY_SECONDS = 0.0
        here = Path.cwd()
        grown = ValueFile(here / "counter_1.db")  # 64 KiB allocated while there is room
        filler = fill(here)
        # ~130-byte entries: the first 64 KiB fill page by page, then the file cannot grow.
        slots = [grown.slot(f"label-set-{i:05d}-" + "x" * 100) for i in range(2000)]
        for slot in slots:
            grown.view[slot] += 1.0
        kept = [s for s in slots if s != SCRATCH]
        late = ValueFile(here / "counter_2.db")  # created on the full disk
        slot = late.slot("late")  # first: a new slot may replace `view`
        late.view[slot] += 1.0
        print(json.dumps({"kept": len(kept), "scratch": slots.count(SCRATCH),
                          "late_file": (here / "counter_2.db").exists()}))
        filler.unlink()
        again = grown.slot("after-space-returned")
        grown.view[again] += 5.0
        slot = late.slot("late")
        late.view[slot] += 1.0
        def read_file(name):
            return {k: v for k, v, _, _ in MmapedDict.read_all_values_from_file(str(here / name))}
        read, read_late = read_file("counter_1.db"), read_file("counter_2.db")
        print(json.dumps({"entries": len(read), "sum": sum(read.values()),
                          "after": read.get("after-space-returned"), "late": read_late}))
        """,
        tmp_path,
        "1m",
    )
    full, after = (json.loads(line) for line in out.splitlines())
    assert 300 < full["kept"] < 2000 and full["scratch"] == 2000 - full["kept"]
    assert full["late_file"] is False, "a file the disk had no room for is not left empty for scrapes"
    # Every label set that got a slot kept its count; the scratch ones left the file alone.
    assert after["entries"] == full["kept"] + 1 and after["sum"] == full["kept"] + 5.0
    assert after["after"] == 5.0, "with space back, the file grows again"
    assert after["late"] == {"late": 1.0}, "the file refused at creation exists once there is room"


def test_the_limits_table_on_a_full_tmpfs_takes_no_signal(tmp_path: Path) -> None:
    out = _run(
        """
        from pathlib import Path
        from tests.support.tiny_disk import fill
        from unigate.limits.shared_table import NoRoomForTable, SharedTable

        here = Path.cwd()
        table = SharedTable(here / "limits.bin")  # allocated while there is room
        filler = fill(here)
        # New keys' first slots land all over the 3 MB table: every page takes stores.
        offsets = [table.offset(f"key:{i}:rpm") for i in range(20000)]
        for off in offsets:
            table.write(off, 1.0, 0.0, 0, 0)
        print(len(set(offsets)), sum(table.read(off)[0] for off in set(offsets)))
        table.close()
        try:
            SharedTable(here / "other.bin")
        except NoRoomForTable as exc:
            print("refused:", exc.reason)
        SharedTable.remove(here / "limits.bin")  # and its semaphore, which outlives this tmpfs
        """,
        tmp_path,
        "4m",
    )
    claimed, refused = out.splitlines()
    count, total = claimed.split()
    assert int(count) == 20000 and float(total) == 20000.0
    assert refused == "refused: No space left on device"


def test_allocation_without_fallocate_writes_zeros_past_the_end_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "posix_fallocate", unsupported)
    path = tmp_path / "f"
    path.write_bytes(b"kept")
    fd = os.open(path, os.O_RDWR)
    try:
        allocate(fd, 0, 100_000)  # over the existing bytes too: they are not overwritten
    finally:
        os.close(fd)
    data = path.read_bytes()
    assert len(data) == 100_000 and data[:4] == b"kept" and data[4:] == bytes(99_996)
    assert os.stat(path).st_blocks * 512 >= 100_000, "written, so allocated: not a sparse file"


# ------------------------------------------------------------- allocation refused: behaviour


class Disk:
    """`disk.allocate` as the value files and the limits table call it, refusing while full."""

    def __init__(self) -> None:
        self.full = False
        self.calls = 0

    def allocate(self, fd: int, offset: int, length: int) -> None:
        self.calls += 1
        if self.full:
            raise ENOSPC
        from unigate.data_dir.disk import allocate

        allocate(fd, offset, length)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    fake = Disk()
    monkeypatch.setattr(values, "allocate", fake.allocate)
    monkeypatch.setattr("unigate.limits.shared_table.allocate", fake.allocate)
    yield fake


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(values, "time", fake)
    return fake


def _read(path: Path) -> dict[str, float]:
    entries = MmapedDict.read_all_values_from_file(str(path))  # type: ignore[no-untyped-call]
    return {key: value for key, value, _, _ in entries}


def test_a_value_file_that_cannot_grow_counts_new_label_sets_nowhere_and_keeps_the_rest(
    tmp_path: Path, disk: Disk, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    file = ValueFile(tmp_path / "counter_x.db")
    kept = [file.slot(f"set-{i}-" + "x" * 200) for i in range(200)]  # ~45 KiB of the first 64
    for slot in kept:
        file.view[slot] += 1.0
    disk.full = True
    calls = disk.calls
    with caplog.at_level(logging.WARNING, logger="unigate.metrics"):
        more = [file.slot(f"new-{i}-" + "x" * 200) for i in range(300)]
        for slot in more:
            file.view[slot] += 1.0
        for slot in kept:
            file.view[slot] += 1.0  # the label sets it has keep counting
    fitted = [s for s in more if s != SCRATCH]
    assert 0 < len(fitted) < 300 and more[len(fitted) :] == [SCRATCH] * (300 - len(fitted))
    assert disk.calls == calls + 1, "within a second, a refused growth is not tried again"
    assert len(caplog.records) == 1, "one line for the outage, not one per label set"
    assert "no room for" in caplog.records[0].message and "No space left" in caplog.records[0].message
    on_disk = _read(tmp_path / "counter_x.db")
    assert len(on_disk) == 200 + len(fitted)
    assert all(on_disk[f"set-{i}-" + "x" * 200] == 2.0 for i in range(200))
    assert all(on_disk[f"new-{i}-" + "x" * 200] == 1.0 for i in range(len(fitted)))
    # Space back: after the retry delay, the next new label set grows the file.
    disk.full = False
    clock.now += 1.5
    with caplog.at_level(logging.WARNING, logger="unigate.metrics"):
        late = file.slot("new-299-" + "x" * 200)
    assert late != SCRATCH and "has room again" in caplog.records[-1].message
    file.view[late] += 3.0
    assert _read(tmp_path / "counter_x.db")["new-299-" + "x" * 200] == 3.0
    file.close()


def test_a_value_file_refused_at_creation_leaves_no_file_and_starts_later(
    tmp_path: Path, disk: Disk, clock: Clock
) -> None:
    disk.full = True
    file = ValueFile(tmp_path / "histogram_x.db")
    assert not (tmp_path / "histogram_x.db").exists(), "an empty file would break every scrape"
    assert file.slot("a") == SCRATCH
    file.view[SCRATCH] += 1.0  # a store into nowhere, not a crash
    disk.full = False
    clock.now += 1.5
    slot = file.slot("a")
    assert slot >= 0
    file.view[slot] += 2.0
    assert _read(tmp_path / "histogram_x.db") == {"a": 2.0}
    file.close()


def test_metrics_without_room_do_not_cache_scratch_slots(tmp_path: Path, disk: Disk, clock: Clock) -> None:
    metrics = Metrics(tmp_path)
    metrics.request("text", "before", "sandbox", 200, 0.01)
    disk.full = True
    # Each request label set is 17 histogram entries: a few dozen outgrow the first 64 KiB.
    for i in range(60):
        metrics.request("text", f"model-{i}", "sandbox", 503, 0.01)
        metrics.usage(f"model-{i}", "sandbox", 10, 5, 0.5)
    metrics.request("text", "before", "sandbox", 200, 0.01)
    got = _samples(tmp_path)

    def requests(model: str, status: str) -> float | None:
        labels = {"family": "text", "model": model, "provider": "sandbox", "status": status}
        return got.get(("unigate_request_duration_seconds_count", frozenset(labels.items())))

    assert requests("before", "200") == 2
    assert requests("model-0", "503") == 1
    assert requests("model-59", "503") is None, "no room: its values went to the scratch slot"
    disk.full = False
    clock.now += 1.5
    metrics.request("text", "model-59", "sandbox", 503, 0.01)
    got = _samples(tmp_path)
    assert requests("model-59", "503") == 1, "a scratch label set was not cached: it has a slot now"
    metrics.close()


def test_no_room_for_the_limits_table_is_one_startup_line(tmp_path: Path, disk: Disk) -> None:
    disk.full = True
    with pytest.raises(NoRoomForTable):
        SharedTable(tmp_path / "limits.bin")
    with pytest.raises(StartupError) as refused:
        create_limits_table(tmp_path)
    message = str(refused.value)
    assert str(tmp_path) in message and "No space left on device" in message
    assert "free space" in message and "UNIGATE_DATA_DIR" in message and "\n" not in message


# -------------------------------------------------------- writers off the request path (SQLite)


class FullDatabase:
    """A SQLite database that refuses to grow while `full` (PRAGMA max_page_count): writes then
    fail with SQLite's own "database or disk is full" (SQLITE_FULL).

    The limit is set on every checkout, so each use of a connection sees the current state.
    Disposing of the pool instead missed a connection checked out at that moment (the usage
    loop's write in progress): it kept its old limit and went back to the discarded pool, never
    closed, and its collection later failed another test with a ResourceWarning."""

    def __init__(self, path: Path) -> None:
        self.engine = db.create_engine(f"sqlite:///{path}")
        self.full = False
        sa.event.listen(self.engine.sync_engine, "checkout", self._limit)

    def _limit(self, conn: Any, _record: Any, _proxy: Any) -> None:
        cur = conn.cursor()
        cur.execute("PRAGMA page_count")
        pages = cur.fetchone()[0]
        cur.execute(f"PRAGMA max_page_count={pages if self.full else 1 << 30}")
        cur.close()

    async def set_full(self, full: bool) -> None:
        self.full = full  # the next checkout takes the new limit


def _usage(key: str, cost: float = 0.5) -> UsageRecord:
    return UsageRecord(key, "chat", "m", "p", "m", 200, 10, 5, 20.0, cost, time.time())


def test_usage_waits_in_memory_while_the_database_is_full(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def run() -> tuple[float, float]:
        full = FullDatabase(tmp_path / "usage.db")
        await db.migrate(full.engine)
        recorder = UsageRecorder(full.engine, interval=0.02)
        await recorder.start()
        await full.set_full(True)
        # Distinct buckets, so each write needs new pages.
        for i in range(3000):
            recorder.record(*_usage(f"key-{i}-" + "k" * 40))
        await _until(lambda: _logged(caplog, "usage-flush"))  # the loop tried
        await asyncio.sleep(0.2)  # and tries again, many times
        assert recorder.pending == 3000, "nothing is lost while the database is full"
        with pytest.raises(sa.exc.OperationalError, match="database or disk is full"):
            await recorder.spent("key-1", 0.0)  # a budget's figure would miss spend: refused
        await full.set_full(False)
        await _until(lambda: recorder.pending == 0)
        await _until(lambda: len(_logged(caplog, "usage-flush")) == 2)
        await recorder.stop()
        async with full.engine.connect() as conn:
            row = (await conn.execute(sa.text("SELECT SUM(requests), SUM(cost) FROM usage_records"))).one()
        await full.engine.dispose()
        return float(row[0]), float(row[1])

    with caplog.at_level(logging.WARNING, logger="unigate"):
        requests, cost = asyncio.run(run())
    assert requests == 3000 and cost == pytest.approx(1500.0)
    lines = _logged(caplog, "usage-flush")
    assert len(lines) == 2, lines  # one when the writes began to fail, one when they work again
    assert "database or disk is full" in lines[0] and "working again" in lines[1]
    assert not any(r.exc_info for r in caplog.records), "an outage is one line, not a traceback"


def test_a_flush_waits_for_the_write_in_progress_and_pending_counts_it(tmp_path: Path) -> None:
    """The loop's write was in progress (its requests out of the buckets, not yet committed)
    when a budget asked `spent`: that flush found nothing to write and read the sum without
    them, and `pending` said 0 for requests not written."""

    async def run() -> None:
        engine = db.create_engine(f"sqlite:///{tmp_path / 'usage.db'}")
        await db.migrate(engine)
        recorder = UsageRecorder(engine, interval=60.0)
        for _ in range(10):
            recorder.record(*_usage("key-a"))
        # Another writer holds SQLite's write lock: the recorder's insert waits for it.
        other = sqlite3.connect(tmp_path / "usage.db")
        other.execute("BEGIN IMMEDIATE")
        writing = asyncio.create_task(recorder.flush())
        await asyncio.sleep(0.05)  # the write has taken the buckets and waits for the lock
        assert not writing.done()
        assert recorder.pending == 10, "requests being written are pending until committed"
        reading = asyncio.create_task(recorder.spent("key-a", 0.0))
        await asyncio.wait([reading], timeout=0.5)
        assert not reading.done(), "the figure waits for the write in progress"
        other.rollback()
        other.close()
        assert await writing == 10
        assert await reading == pytest.approx(5.0), "the spend being written counts"
        assert recorder.pending == 0
        await engine.dispose()

    asyncio.run(run())


def _logged(caplog: pytest.LogCaptureFixture, start: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(start)]


async def _until(check: Callable[[], object], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_the_request_log_keeps_its_rows_while_the_database_is_full(tmp_path: Path) -> None:
    async def run() -> list[str]:
        full = FullDatabase(tmp_path / "log.db")
        await db.migrate(full.engine)
        log = RequestLog(full.engine, per_flush=500)
        await full.set_full(True)
        for i in range(400):
            scope = {"method": "POST", "path": "/v1/chat/completions", "headers": []}
            now = time.perf_counter()
            log.add(
                finished(Request(scope, _nothing, _nothing, f"req-{i:03d}-" + "r" * 20), 200, now, now, None)
            )
        with pytest.raises(sa.exc.OperationalError):
            await log.flush()
        newest = await log.recent(5)  # the dashboard still reads what the table holds
        assert newest == []
        await full.set_full(False)
        assert await log.flush() == 400
        rows = await log.recent(500)
        await full.engine.dispose()
        return [row["request_id"] for row in rows]

    ids = asyncio.run(run())
    assert sorted(ids) == [f"req-{i:03d}-" + "r" * 20 for i in range(400)]


async def _nothing(*_: Any) -> Any:
    return None


# ------------------------------------------------------------------------- the request path


def test_a_full_sandbox_journal_is_a_storage_refusal_and_loses_no_record(tmp_path: Path) -> None:
    async def run() -> None:
        journal = JobJournal(tmp_path / "jobs")
        await journal.append("a", {"n": 1})
        broken = journal._out
        # The disk fills: this file takes no more bytes.
        journal._out = Path("/dev/full").open("ab")  # noqa: SIM115 - closed by the journal
        with pytest.raises(StorageUnavailable) as refused:
            await journal.append("b", {"n": 2})
        assert refused.value.status == 503 and refused.value.code == "storage_unavailable"
        assert broken is not None
        broken.close()
        await journal.append("c", {"n": 3})  # room again: a new file
        assert await journal.get("a") == {"id": "a", "n": 1}
        assert await journal.get("c") == {"id": "c", "n": 3}
        assert await journal.get("b") is None
        journal.close()
        assert len(list((tmp_path / "jobs").glob("jobs-*.jsonl"))) == 2

    asyncio.run(run())


def test_failures_no_handler_mapped_are_503s_when_the_disk_or_database_is_full() -> None:
    request = Request(
        {"method": "POST", "path": "/v1/images/generations", "headers": []}, _nothing, _nothing, "r1"
    )
    full_disk = _unexpected(request, OSError(errno.ENOSPC, "No space left on device"))
    assert isinstance(full_disk, StorageUnavailable) and full_disk.status == 503
    wrapped = RuntimeError("could not spool")
    wrapped.__cause__ = OSError(errno.EDQUOT, "Disk quota exceeded")
    assert isinstance(_unexpected(request, wrapped), StorageUnavailable)
    full = sqlite3.OperationalError("database or disk is full")  # SQLITE_FULL, as the driver raises it
    sqlite_full = sa.exc.OperationalError("INSERT ...", {}, full)
    assert isinstance(_unexpected(request, sqlite_full), DatabaseUnavailable)
    bug = _unexpected(request, KeyError("x"))
    assert type(bug) is GatewayError and bug.status == 500
