"""The sandbox's job journal: one append-only JSON-lines file per process.

A submit is one buffered write and flush (a few µs, no thread hop, no file per job) that
survives the process being killed; a job submitted by one worker can be polled by another,
which finds it by scanning the other journals' new lines. Only an index (id -> file,
offset, length) is kept in memory; records are read back on demand.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import IO, Any

import orjson

_RESCAN_AFTER = 0.2  # seconds between scans for jobs other processes wrote


class JobJournal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._out: IO[bytes] | None = None
        self._out_path: Path | None = None
        self._index: dict[str, tuple[Path, int, int]] = {}
        self._scanned: dict[Path, int] = {}
        self._last_scan = 0.0

    def append(self, job_id: str, record: dict[str, Any]) -> None:
        if self._out is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._out_path = self.directory / f"jobs-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
            self._out = self._out_path.open("ab")
        assert self._out_path is not None
        line = orjson.dumps({"id": job_id, **record}) + b"\n"
        offset = self._out.tell()
        self._out.write(line)
        self._out.flush()
        self._index[job_id] = (self._out_path, offset, len(line))
        self._scanned[self._out_path] = offset + len(line)

    def get(self, job_id: str) -> dict[str, Any] | None:
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
            self._out.close()
            self._out = None
