"""What the fake task upstreams (fake_kling, fake_vidu, fake_picwish, fake_openai_videos,
fake_veo) share: scripted job timelines, request recording and result-file serving. Each
vendor fake is a @dataclass subclass of `FakeTaskUpstream` that adds its routes, credentials
and wire format on top.

Recording: every request that reaches the server (matched route or not) becomes a `Call`:
method, path with query, lower-cased headers, the status answered, its `kind` ("submit",
"poll", "download" or "other"), the job it concerned and, for polls, the stage it showed.
Submits also keep the parsed body: JSON, form fields (multipart or urlencoded) and uploaded
files as `FileInfo` (name, content type, size, sha256; not the bytes). A refusal of the
credentials leaves its reason in `note`.

Timelines: each job gets a list of generic stages when it is submitted, from the `script`
the fake has at that moment (later changes do not touch it):
  ok       queued -> running -> success
  fail     queued -> running -> failed (with the vendor's failure reason; `fail_reason`
           overrides the vendor's default text or code)
  stall    queued -> running, forever
  unknown  queued -> running -> `unknown` for `unknown_stages` stages -> success; the vendor
           shows a state it never documents while the job is `unknown`
A vendor may add scripts (fake_veo: "filtered"). Each poll of a job shows its current stage;
after `polls_per_stage` polls the job moves on one stage. With `manual=True` (fixed per job at
submit) it only moves when the test calls `advance(job_id)`. A submit does not count as a poll.

Knobs every fake has: `script`, `polls_per_stage`, `unknown_stages`, `manual`, `fail_reason`,
`submit_status` (anything but 200 answers that HTTP status in the vendor's error shape),
`submit_reject` (HTTP 400 in the vendor's error shape), `poll_status` (same, for polls) and
`poll_delay` (seconds every poll waits before answering). `reset(**settings)` restores the
defaults (credentials and port stay) and keeps what was recorded.

Result files are published under the fake's own `/files/<name>` once a job succeeds (served
without credentials, like the vendors' CDN links) with the right Content-Type.

The test thread reads through the snapshot methods (`calls`, `submits`, `polls`,
`downloads`, `jobs`, `job`, `served`, ...), which return copies; every change happens under
one lock.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

import orjson
from aiohttp import BodyPartReader, web

from tests.support.loopback import LoopbackServer
from tests.support.net import free_port

QUEUED = "queued"
RUNNING = "running"
SUCCESS = "success"
FAILED = "failed"
UNKNOWN = "unknown"

SCRIPTS: dict[str, tuple[str, ...]] = {
    "ok": (QUEUED, RUNNING, SUCCESS),
    "fail": (QUEUED, RUNNING, FAILED),
    "stall": (QUEUED, RUNNING),
}
# Settings `reset` leaves alone.
_KEPT = frozenset({"port", "api_key", "access_key", "secret_key"})


@dataclass(frozen=True)
class FileInfo:
    filename: str
    content_type: str  # as sent; "" when the part had none
    size: int
    sha256: str


@dataclass
class Call:
    method: str
    path: str  # with the query string
    headers: dict[str, str]  # lower-cased names
    kind: str = "other"  # submit | poll | download | other
    status: int = 0  # the HTTP status answered (0 while in flight)
    job_id: str | None = None
    stage: str | None = None  # the generic stage a poll showed
    json: Any = None  # the parsed JSON body of a submit
    fields: dict[str, list[str]] = field(default_factory=dict)  # form fields of a submit
    files: dict[str, list[FileInfo]] = field(default_factory=dict)  # uploaded files of a submit
    note: str = ""  # e.g. why the credentials were refused
    at: float = field(default_factory=time.monotonic)  # when it arrived

    def params(self) -> dict[str, Any]:
        """The submit's parameters: the first value of each form field, then a JSON object's keys."""
        out: dict[str, Any] = {k: v[0] for k, v in self.fields.items() if v}
        if isinstance(self.json, dict):
            out.update(self.json)
        return out


_CALL = web.RequestKey("call", Call)


@dataclass
class Job:
    id: str
    kind: str  # the vendor's action / tool / model
    params: dict[str, Any]  # the submitted parameters (see Call.params)
    stages: list[str]
    manual: bool
    created: float
    index: int = 0  # the stage the next poll shows
    at_stage: int = 0  # polls already shown at that stage
    polls: int = 0
    served: list[str] = field(default_factory=list)  # the stage each poll showed
    started: float | None = None  # when it first showed a stage past queued
    finished: float | None = None  # when it first showed a terminal stage
    extra: dict[str, Any] = field(default_factory=dict)  # vendor specifics

    @property
    def stage(self) -> str:
        return self.stages[self.index]


def most_in_a_round(times: list[float], gap: float) -> int:
    """The most polls of one job that fell into one round: polls closer than `gap` seconds to
    the previous one belong to its round. A poller waits at least the task's poll interval
    between two polls of it, so with `gap` below that interval two polls in one round mean two
    pollers polled the job at once."""
    most = run = 0
    last = None
    for at in sorted(times):
        run = run + 1 if last is not None and at - last < gap else 1
        most = max(most, run)
        last = at
    return most


class BodyError(ValueError):
    """The request body could not be parsed (the vendor answers 400)."""


@dataclass
class FakeTaskUpstream(LoopbackServer):
    script: str = "ok"
    polls_per_stage: int = 1
    unknown_stages: int = 2
    manual: bool = False
    fail_reason: str = ""
    submit_status: int = 200
    submit_reject: bool = False
    poll_status: int = 200
    poll_delay: float = 0.0
    port: int = field(default_factory=free_port)

    # Stages that end a job; vendors with extra terminal stages add them.
    terminal: ClassVar[frozenset[str]] = frozenset({SUCCESS, FAILED})
    extra_scripts: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._jobs: dict[str, Job] = {}
        self._files: dict[str, tuple[str, bytes, str | None]] = {}  # name -> (type, bytes, job)
        self._stopping = False
        self._timeline(self.script)  # an unknown script fails here, not at the first submit
        self._init_server()

    # --- lifecycle ----------------------------------------------------------------------

    @property
    def root(self) -> str:
        """http://127.0.0.1:<port>, without any API prefix."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._stopping = True
        super().stop()

    def _routes(self, app: web.Application) -> None:
        app.middlewares.append(self._record)
        app.router.add_get("/files/{name}", self._file)
        self._vendor_routes(app)

    def _vendor_routes(self, app: web.Application) -> None:
        raise NotImplementedError

    # --- test-side controls and observations ---------------------------------------------

    def reset(self, **settings: Any) -> None:
        """Back to the default behaviour (plus `settings`); recorded traffic and jobs stay."""
        known = {f.name: f for f in fields(self) if f.init}
        for name in settings:
            if name not in known or name == "port":
                raise AttributeError(name)
        if "script" in settings:
            self._timeline(settings["script"])
        with self._lock:
            for name, spec in known.items():
                if name not in _KEPT and spec.default is not MISSING:
                    setattr(self, name, spec.default)
            for name, value in settings.items():
                setattr(self, name, value)

    def advance(self, job_id: str, stages: int = 1) -> str:
        """Move a job (manual or not) `stages` forward; returns the stage it now shows."""
        with self._lock:
            job = self._jobs[job_id]
            job.index = min(job.index + stages, len(job.stages) - 1)
            job.at_stage = 0
            return job.stage

    def calls(self) -> list[Call]:
        """Every request, in arrival order."""
        with self._lock:
            return [copy.deepcopy(c) for c in self._calls]

    def submits(self) -> list[Call]:
        return [c for c in self.calls() if c.kind == "submit"]

    def polls(self, job_id: str | None = None) -> list[Call]:
        """Poll requests (all, or those about `job_id`), refused ones included."""
        return [c for c in self.calls() if c.kind == "poll" and (job_id is None or c.job_id == job_id)]

    def downloads(self) -> list[Call]:
        return [c for c in self.calls() if c.kind == "download"]

    def polls_per_round(self, gap: float) -> dict[str, int]:
        """The most polls each job got in one round (see `most_in_a_round`): 1 when only one
        poller at a time polls it."""
        times: dict[str, list[float]] = {}
        for call in self.polls():
            if call.job_id is not None:
                times.setdefault(call.job_id, []).append(call.at)
        return {job_id: most_in_a_round(at, gap) for job_id, at in times.items()}

    @property
    def jobs(self) -> dict[str, Job]:
        """All jobs by id, in submit order (copies)."""
        with self._lock:
            return {k: copy.deepcopy(v) for k, v in self._jobs.items()}

    def job(self, job_id: str) -> Job:
        with self._lock:
            return copy.deepcopy(self._jobs[job_id])

    def job_ids(self) -> list[str]:
        with self._lock:
            return list(self._jobs)

    def served(self, job_id: str) -> list[str]:
        """The generic stage each poll of the job showed."""
        with self._lock:
            return list(self._jobs[job_id].served)

    def file_names(self) -> list[str]:
        """The names published under /files/."""
        with self._lock:
            return list(self._files)

    # --- for the vendor fakes -----------------------------------------------------------

    def _timeline(self, script: str) -> list[str]:
        if script == "unknown":
            return [QUEUED, RUNNING, *[UNKNOWN] * max(1, self.unknown_stages), SUCCESS]
        stages = SCRIPTS.get(script) or self.extra_scripts.get(script)
        if stages is None:
            raise ValueError(f"unknown script {script!r} for {type(self).__name__}")
        return list(stages)

    @web.middleware
    async def _record(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        call = Call(request.method, request.path_qs, {k.lower(): v for k, v in request.headers.items()})
        request[_CALL] = call
        with self._lock:
            self._calls.append(call)
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            self._note(call, status=exc.status)
            raise
        except Exception:
            self._note(call, status=500)
            raise
        self._note(call, status=response.status)
        return response

    def _note(self, call: Call, **changes: Any) -> None:
        with self._lock:
            for name, value in changes.items():
                setattr(call, name, value)

    @staticmethod
    def _call(request: web.Request) -> Call:
        return request[_CALL]

    async def _read_body(self, request: web.Request) -> Call:
        """Parse the body into the request's Call (kind "submit"): multipart parts with a
        filename are files, the other parts and urlencoded pairs are fields, anything else
        non-empty must be JSON. Raises BodyError when it cannot be parsed."""
        call = self._call(request)
        self._note(call, kind="submit")
        form: dict[str, list[str]] = {}
        files: dict[str, list[FileInfo]] = {}
        body: Any = None
        try:
            if request.content_type.startswith("multipart/"):
                reader = await request.multipart()
                async for part in reader:
                    if not isinstance(part, BodyPartReader):
                        raise BodyError("nested multipart is not accepted")
                    data = bytes(await part.read(decode=False))
                    name = part.name or ""
                    if part.filename is not None:
                        ctype = part.headers.get("Content-Type", "")
                        info = FileInfo(part.filename, ctype, len(data), hashlib.sha256(data).hexdigest())
                        files.setdefault(name, []).append(info)
                    else:
                        form.setdefault(name, []).append(data.decode("utf-8", "replace"))
            elif request.content_type == "application/x-www-form-urlencoded":
                for name, value in (await request.post()).items():
                    form.setdefault(name, []).append(str(value))
            else:
                raw = await request.read()
                if raw.strip():
                    body = orjson.loads(raw)
        except (orjson.JSONDecodeError, ValueError, AssertionError) as exc:
            raise BodyError(str(exc) or type(exc).__name__) from exc
        finally:
            self._note(call, json=body, fields=form, files=files)
        return call

    def _gate(self, kind: str) -> tuple[int, bool]:
        """(status, reject) for a submit, (status, False) for a poll - the knobs right now."""
        with self._lock:
            if kind == "submit":
                return self.submit_status, self.submit_reject
            return self.poll_status, False

    def _failure(self, default: str) -> str:
        with self._lock:
            return self.fail_reason or default

    def _new_job(
        self,
        call: Call,
        kind: str,
        params: dict[str, Any],
        job_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Job:
        """Register a job with a timeline from the current script; the Call gets its id."""
        with self._lock:
            script, manual = self.script, self.manual
        stages = self._timeline(script)
        job = Job(job_id or str(uuid.uuid4()), kind, params, stages, manual, time.time(), extra=extra or {})
        with self._lock:
            self._jobs[job.id] = job
            call.job_id = job.id
        return job

    def _mark(self, job: Job, **extra: Any) -> None:
        """Set vendor specifics on a live job."""
        with self._lock:
            job.extra.update(extra)

    def _find(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def _find_where(self, test: Callable[[Job], bool]) -> Job | None:
        with self._lock:
            return next((j for j in self._jobs.values() if test(j)), None)

    def _all_jobs(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    async def _hold(self) -> None:
        """Wait `poll_delay` seconds (re-read while waiting; stopping the fake releases it)."""
        since = time.monotonic()
        while not self._stopping:
            with self._lock:
                delay = self.poll_delay
            if time.monotonic() - since >= delay:
                return
            await asyncio.sleep(0.02)

    def _poll_call(self, request: web.Request, job_id: str | None = None) -> Call:
        call = self._call(request)
        self._note(call, kind="poll", job_id=job_id)
        return call

    def _step(self, call: Call, job: Job) -> str:
        """Count a poll of `job`: the stage it shows now, then maybe move on."""
        with self._lock:
            stage = job.stage
            job.polls += 1
            job.served.append(stage)
            self._stamp(job, stage)
            call.job_id, call.stage = job.id, stage
            if not job.manual:
                job.at_stage += 1
                if job.at_stage >= max(1, self.polls_per_stage) and job.index < len(job.stages) - 1:
                    job.index += 1
                    job.at_stage = 0
            return stage

    def _peek(self, job: Job) -> str:
        """The stage a job shows without counting a poll (creates, lists)."""
        with self._lock:
            self._stamp(job, job.stage)
            return job.stage

    def _finish_now(self, job: Job) -> str:
        """Jump to the timeline's last stage (a synchronous create); returns it."""
        with self._lock:
            job.index = len(job.stages) - 1
            self._stamp(job, job.stage)
            return job.stage

    def _stamp(self, job: Job, stage: str) -> None:
        now = time.time()
        if stage != QUEUED and job.started is None:
            job.started = now
        if stage in self.terminal and job.finished is None:
            job.finished = now

    def _publish(self, name: str, content_type: str, data: bytes, job_id: str | None = None) -> str:
        """Serve `data` at /files/<name>; returns its absolute URL."""
        with self._lock:
            self._files[name] = (content_type, data, job_id)
        return f"{self.root}/files/{name}"

    def _published(self, name: str) -> tuple[str, bytes, str | None] | None:
        with self._lock:
            return self._files.get(name)

    async def _file(self, request: web.Request) -> web.Response:
        return self._serve(request, request.match_info["name"])

    def _serve(self, request: web.Request, name: str) -> web.Response:
        """Answer a published file (a "download" call), or a plain 404."""
        found = self._published(name)
        self._note(self._call(request), kind="download", job_id=found[2] if found else None)
        if found is None:
            return web.Response(status=404, text="Not Found")
        content_type, data, _ = found
        return web.Response(body=data, headers={"Content-Type": content_type})


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        body=orjson.dumps(body),
        headers={"Content-Type": "application/json", **(headers or {})},
    )
