"""The sandbox's asynchronous jobs other than music: video, sound effects, lip sync and the
visual/document tools, each behaving like a real upstream job.

A submit checks and stores the job's inputs (uploads and URLs the gateway fetches through
its SSRF guard) in the file store and records the job in the sandbox's journal (journal.py),
so jobs survive a gateway restart (even kill -9) as an upstream's would, and on a shared store
any replica can poll them. A job's state is a function of the time since it was submitted:
queued for the first fifth of `task_seconds`, then in progress with a rising percentage, then
done; its files are rendered once, on the first poll after that (in a worker thread), and
stored as media, which the gateway serves under `/media/`. A prompt containing
`[sandbox:fail]` makes the job fail, so failure paths can be exercised offline (`text` too,
for jobs driven by text rather than a prompt).

Each kind of job (`SandboxKind`) says how to check its inputs and how to render its files
from their bytes (pure work: no file system, no store); reading the inputs from the store,
storing the results, the journal, the timeline and the failure handling are shared here.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from unigate.errors import InvalidRequest, StorageUnavailable
from unigate.providers.base import SubmitResult, TaskRef, TaskSubmission, UpstreamTask, UrlFetcher
from unigate.storage import Storage, input_key, media_key
from unigate.webhooks.fetch import read_input
from unigate_sandbox.journal import journal_for

log = logging.getLogger("unigate.sandbox")

FAIL_MARKER = "[sandbox:fail]"
QUEUED_SHARE = 0.2  # of task_seconds spent queued before the job runs


class SandboxKind(Protocol):
    """One kind of sandbox job."""

    async def prepare(self, job: TaskSubmission, inputs: InputStore) -> dict[str, Any]:
        """Check the job's inputs (raise `InvalidRequest` for bad ones) and return what its
        rendering needs, JSON-able: resolved parameters, and under `files` the stored input
        files by role (`InputStore.save`'s keys)."""
        ...

    def render(self, job_id: str, record: dict[str, Any], files: dict[str, bytes]) -> Rendered:
        """The job's files (names starting with `job_id`), described as `UpstreamTask.outputs`
        with `/media/<name>` urls, from its record and its input `files` (by role). Runs in a
        worker thread; a `ValueError` or `OSError` fails the job with its message."""
        ...


@dataclass(slots=True)
class Rendered:
    outputs: list[dict[str, Any]]
    files: dict[str, bytes] = field(default_factory=dict)  # media name -> content, to store

    def add(self, name: str, data: bytes) -> str:
        """Keep `data` as the media file `name`; its `/media/` url."""
        self.files[name] = data
        return f"/media/{name}"


class InputStore:
    """Where a job's input files are kept until it is rendered, and how URL inputs arrive."""

    def __init__(self, storage: Storage, fetch_url: UrlFetcher | None, job_id: str) -> None:
        self.storage = storage
        self.fetch_url = fetch_url
        self.job_id = job_id

    async def save(self, name: str, data: bytes) -> str:
        """Store an input file; returns its key (for the job record's `files`)."""
        key = input_key(f"{self.job_id}-{name}")
        await self.storage.put(key, data)
        return key

    async def copy_media(self, name: str, role: str) -> str | None:
        """A file an earlier job produced (a remix starts from its source's), copied into this
        job's inputs as `role`: the job keeps it when the earlier job's files are deleted before
        it renders. Its key, or None if there is no such file."""
        data = await self.storage.read(media_key(name))
        return None if data is None else await self.save(role, data)

    async def fetch(self, url: str, max_bytes: int, param: str) -> bytes:
        """A URL input, fetched through the gateway's SSRF guard (data: URLs decoded)."""
        return await read_input(self.fetch_url, url, max_bytes, param)


class SandboxTasks:
    def __init__(
        self,
        data_dir: Path,
        seconds: float,
        fetch_url: UrlFetcher | None,
        kinds: dict[str, SandboxKind],
        storage: Storage,
    ) -> None:
        self.journal = journal_for(storage, data_dir, "tasks")
        self.storage = storage
        self.seconds = seconds
        self.fetch_url = fetch_url
        self.kinds = kinds

    def kind(self, action: str) -> SandboxKind | None:
        """The kind for an action: exact (`text2video`), else by prefix (`visual/…`)."""
        return self.kinds.get(action) or self.kinds.get(action.split("/", 1)[0] + "/")

    async def submit(self, job: TaskSubmission) -> SubmitResult:
        kind = self.kind(job.action)
        if kind is None:
            raise InvalidRequest(f"The sandbox has no '{job.action}' jobs.", code="unsupported_operation")
        job_id = "sbt_" + uuid.uuid4().hex
        prepared = await kind.prepare(job, InputStore(self.storage, self.fetch_url, job_id))
        record = {
            "action": job.action,
            "model": job.model,
            "fields": job.fields,
            "prepared": prepared,
            "created": time.time(),
        }
        await self.journal.append(job_id, record)
        return SubmitResult(job_id)

    async def poll(self, refs: list[TaskRef]) -> dict[str, UpstreamTask]:
        out: dict[str, UpstreamTask] = {}
        for ref in refs:
            try:
                record = await self.journal.get(ref.upstream_id)
                if record is None:
                    continue  # unknown here: the poller retries, then the deadline decides
                out[ref.upstream_id] = await self._state(ref.upstream_id, record)
            except StorageUnavailable as exc:  # the store failed, not the job: polled again later
                log.warning(
                    "sandbox job %s not polled: storage unavailable (%s)", ref.upstream_id, exc.detail
                )
            except Exception:  # one broken job must not stall the others; it is retried
                log.exception("sandbox job %s could not be polled", ref.upstream_id)
        return out

    async def _state(self, job_id: str, record: dict[str, Any]) -> UpstreamTask:
        created = float(record["created"])
        elapsed = time.time() - created
        started = int(created + self.seconds * QUEUED_SHARE)
        if elapsed < self.seconds * QUEUED_SHARE:
            return UpstreamTask(job_id, "QUEUED", progress=0)
        fields = record["fields"]
        if FAIL_MARKER in str(fields.get("prompt") or "") + str(fields.get("text") or ""):
            if elapsed < self.seconds * 0.5:
                return UpstreamTask(job_id, "IN_PROGRESS", progress=30, start_time=started)
            return _failed(job_id, "The sandbox was asked to fail this task.", started)
        if elapsed < self.seconds:
            return UpstreamTask(
                job_id, "IN_PROGRESS", progress=int(100 * elapsed / self.seconds), start_time=started
            )
        kind = self.kind(str(record["action"]))
        if kind is None:
            return _failed(job_id, f"The sandbox has no '{record['action']}' jobs.", started)
        try:
            files = await self._inputs(record["prepared"])
            rendered = await asyncio.to_thread(kind.render, job_id, record, files)
        except (OSError, ValueError) as exc:
            return _failed(job_id, f"The sandbox could not render this task: {exc}", started)
        for name, data in rendered.files.items():
            await self.storage.put(media_key(name), data)
        return UpstreamTask(job_id, "SUCCESS", progress=100, outputs=rendered.outputs, start_time=started)

    async def _inputs(self, prepared: dict[str, Any]) -> dict[str, bytes]:
        """A job's stored input files by role. A record written before the file store kept
        them names absolute paths under the data dir, at the same roles."""
        refs = prepared.get("files")
        if refs is None:
            refs = {k: v for k, v in prepared.items() if k in _OLD_FILE_ROLES and isinstance(v, str)}
        files: dict[str, bytes] = {}
        for role, ref in refs.items():
            data = (
                await asyncio.to_thread(_read_old, Path(ref))
                if ref.startswith("/")
                else await self.storage.read(ref)
            )
            if data is None:
                raise ValueError(f"its {role} input is missing")
            files[role] = data
        return files


_OLD_FILE_ROLES = ("image", "mask", "video", "audio")


def _read_old(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _failed(job_id: str, reason: str, started: int) -> UpstreamTask:
    return UpstreamTask(
        job_id, "FAILURE", fail_reason=reason, error_type="sandbox_failure", start_time=started
    )
