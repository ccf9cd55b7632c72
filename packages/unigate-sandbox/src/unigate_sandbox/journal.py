"""The sandbox's job records, kept where the file store keeps its files.

On the local store (one machine), the journal: one append-only JSON-lines file per process
under the data dir. A submit is one buffered write and flush (a few µs, no thread hop, no file
per job) that survives the process being killed; a job submitted by one worker can be polled
by another, which finds it by scanning the other journals' new lines. Only an index (id ->
file, offset, length) is kept in memory; records are read back on demand.

On a shared store (S3), one object per job (`StoredJournal`): a job submitted through one
replica is polled by whichever replica holds its task's lease, which reads the record, and the
job's input and output files, from the same bucket. Records never change once written, so each
process keeps the ones it read.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import IO, Any, Protocol

import orjson

from unigate.errors import StorageUnavailable
from unigate.storage import Storage, record_key

log = logging.getLogger("unigate.sandbox")

_RESCAN_AFTER = 0.2  # seconds between scans for jobs other processes wrote
_KEPT_RECORDS = 2048  # records a StoredJournal keeps after reading them (a few hundred bytes each)


class Journal(Protocol):
    async def append(self, job_id: str, record: dict[str, Any]) -> None: ...

    async def get(self, job_id: str) -> dict[str, Any] | None: ...

    def close(self) -> None: ...


def journal_for(storage: Storage, data_dir: Path, area: str) -> Journal:
    """Where the sandbox's `area` (`jobs` for music, `tasks` for the others) records go: with
    the shared store's objects, else in the data dir's journal files."""
    if storage.shared:
        return StoredJournal(storage, area)
    return JobJournal(data_dir / "sandbox" / area)


class StoredJournal:
    """One JSON object per job in the shared store (see the module docstring)."""

    def __init__(self, storage: Storage, area: str) -> None:
        self.storage = storage
        self.area = area
        self._kept: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def append(self, job_id: str, record: dict[str, Any]) -> None:
        await self.storage.put(record_key(self.area, job_id), orjson.dumps({"id": job_id, **record}))
        self._keep(job_id, {"id": job_id, **record})

    async def get(self, job_id: str) -> dict[str, Any] | None:
        record = self._kept.get(job_id)
        if record is not None:
            self._kept.move_to_end(job_id)
            return record
        data = await self.storage.read(record_key(self.area, job_id))
        if data is None:
            return None
        loaded: dict[str, Any] = orjson.loads(data)
        self._keep(job_id, loaded)
        return loaded

    def _keep(self, job_id: str, record: dict[str, Any]) -> None:
        self._kept[job_id] = record
        if len(self._kept) > _KEPT_RECORDS:
            self._kept.popitem(last=False)

    def close(self) -> None:
        self._kept.clear()


class JobJournal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._out: IO[bytes] | None = None
        self._out_path: Path | None = None
        self._index: dict[str, tuple[Path, int, int]] = {}
        self._scanned: dict[Path, int] = {}
        self._last_scan = 0.0

    async def append(self, job_id: str, record: dict[str, Any]) -> None:
        line = orjson.dumps({"id": job_id, **record}) + b"\n"
        try:
            if self._out is None:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._out_path = self.directory / f"jobs-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
                self._out = self._out_path.open("ab")
            offset = self._out.tell()
            self._out.write(line)
            self._out.flush()
        except OSError as exc:
            # A full disk: the job is refused like any other store failure. A line cut short
            # is never read (scans take whole lines); the next job starts a file of its own, so
            # nothing is appended to the broken line.
            reason = exc.strerror or str(exc)
            log.warning("sandbox: cannot write the job journal in %s: %s", self.directory, reason)
            self.close()
            raise StorageUnavailable(reason) from None
        assert self._out_path is not None
        self._index[job_id] = (self._out_path, offset, len(line))
        self._scanned[self._out_path] = offset + len(line)

    async def get(self, job_id: str) -> dict[str, Any] | None:
        where = self._index.get(job_id)
        if where is None and time.monotonic() - self._last_scan >= _RESCAN_AFTER:
            self._scan()
            where = self._index.get(job_id)
        if where is None:
            return None
        path, offset, length = where
        with path.open("rb") as f:
            f.seek(offset)
            record: dict[str, Any] = orjson.loads(f.read(length))
        return record

    def _scan(self) -> None:
        self._last_scan = time.monotonic()
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob("jobs-*.jsonl")):
            start = self._scanned.get(path, 0)
            with path.open("rb") as f:
                f.seek(start)
                data = f.read()
            end = data.rfind(b"\n") + 1  # a line being written right now is read next time
            position = start
            for line in data[:end].splitlines(keepends=True):
                try:
                    job_id = orjson.loads(line)["id"]
                except (orjson.JSONDecodeError, KeyError, TypeError):
                    position += len(line)
                    continue
                self._index[job_id] = (path, position, len(line))
                position += len(line)
            self._scanned[path] = start + end

    def close(self) -> None:
        if self._out is not None:
            with contextlib.suppress(OSError):  # its last write failed: nothing left to lose
                self._out.close()
            self._out = None
