"""A fake Suno-API relay (the Suno-API project / new-api wire format) on 127.0.0.1, in a
background thread with its own event loop, recording everything it receives.

Wire format (see reference task-relay-notes §1-2):
  POST /suno/submit/music|lyrics   Bearer auth; answers {"code": "success", "message": "",
                                   "data": "<task id>"} or, with submit_shape="record", the task
                                   record {"task_id", "status", "data": [clip, clip]}
  POST /suno/fetch {"ids": [...]}  {"code": "success", "message": "", "data": [task, ...]} for the
                                   ids it knows (unknown ids are silently left out)
  GET  /suno/fetch/{id}            one task, or HTTP 400 task_not_exist
Failures use {"code": "<code>", "message": "...", "data": null} with a real HTTP status.

Each task follows a scripted timeline of stages, fixed when it is submitted (from the
instance's `script`):
  ok          submitted -> queued -> streaming -> complete (clips with audio/image/video URLs and
              metadata.duration)
  fail        ... -> task status FAILURE with `fail_reason`, clips `error` with metadata.error_message
  clip_error  ... -> clips `error` (metadata.error_message) while the task status still says
              IN_PROGRESS and fail_reason is empty (the clips are the only signal)
  stall       ... -> streaming forever
  unknown     submitted -> streaming -> `weird_state` (task and clips) for `unknown_stages`
              stages -> complete
Lyrics tasks: submitted -> streaming -> complete with {"id", "status", "title", "text"}.

A task moves one stage every `fetches_per_stage` fetches that include it (the first fetch shows
the first stage), or every `stage_seconds` seconds if that is set, or - with `manual=True` - only
when the test calls `advance(task_id)`.

Submit failures: `submit_status` (e.g. 500) answers that status; `submit_reject=True` answers
HTTP 400 {"code": "invalid_prompt", "message": "bad prompt", "data": null}. Fetch failures:
`fetch_status`. `fetch_delay` holds every fetch that long before answering; `submit_delay` every
submit (after recording it).

The test thread reads state through the snapshot methods (`submits`, `fetch_calls`, ...);
every mutation happens under one lock.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support.fake_tasks import most_in_a_round
from tests.support.loopback import LoopbackServer
from tests.support.net import free_port

SCRIPTS: dict[str, list[str]] = {
    "ok": ["submitted", "queued", "streaming", "complete"],
    "fail": ["submitted", "queued", "streaming", "error"],
    "clip_error": ["submitted", "queued", "streaming", "clip_error"],
    "stall": ["submitted", "queued", "streaming"],
}
LYRICS_STAGES = ["submitted", "streaming", "complete"]
WEIRD = "weird_state"
FAIL_REASON = "The upstream could not generate this song (fake failure)."
CLIP_ERROR = "Clip generation failed: content flagged (fake)."
DURATIONS = (123.4, 118.2)
LYRICS_TEXT = "[Verse]\nTests that pass at dawn\n[Chorus]\nGreen, green, green"
LYRICS_TITLE = "Green Tests"

_TASK_STATUS = {
    "submitted": "SUBMITTED",
    "queued": "QUEUED",
    "streaming": "IN_PROGRESS",
    "complete": "SUCCESS",
    "error": "FAILURE",
    "clip_error": "IN_PROGRESS",
    WEIRD: WEIRD,
}
_CLIP_STATUS = {"clip_error": "error"}


@dataclass
class Submit:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    task_id: str | None  # the id it answered with, None for a failed submit


@dataclass
class FakeTask:
    id: str
    action: str  # MUSIC | LYRICS
    body: dict[str, Any]
    stages: list[str]
    clip_ids: list[str]
    created: float
    manual: bool
    fetches: int = 0
    manual_stage: int = 0
    served: list[str] = field(default_factory=list)  # the stage shown by each fetch
    fetched_at: list[float] = field(default_factory=list)  # when each fetch arrived (monotonic)


@dataclass
class FakeSuno(LoopbackServer):
    api_key: str = "sk-relay"
    script: str = "ok"
    submit_shape: str = "id"  # "id" | "record"
    submit_status: int = 200
    submit_reject: bool = False
    fetches_per_stage: int = 1
    stage_seconds: float | None = None
    unknown_stages: int = 4
    manual: bool = False
    fetch_delay: float = 0.0
    fetch_status: int = 200
    submit_delay: float = 0.0  # seconds a submit is held before it is answered
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._submits: list[Submit] = []
        self._fetch_calls: list[list[str]] = []
        self._tasks: dict[str, FakeTask] = {}
        self._in_flight = 0
        self._stopping = False
        self._init_server()

    # --- lifecycle --------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The relay root, as the gateway's `base_url` (paths /suno/... hang off it)."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._stopping = True
        super().stop()

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/suno/submit/{action}", self._submit)
        app.router.add_post("/suno/fetch", self._fetch)
        app.router.add_get("/suno/fetch/{task_id}", self._fetch_one)

    # --- test-side controls and observations -------------------------------------------

    def reset(self, **settings: Any) -> None:
        """Back to the default behaviour (plus `settings`); recorded traffic is kept."""
        defaults = FakeSuno.__dataclass_fields__
        with self._lock:
            for name in (
                "script",
                "submit_shape",
                "submit_status",
                "submit_reject",
                "fetches_per_stage",
                "stage_seconds",
                "unknown_stages",
                "manual",
                "fetch_delay",
                "fetch_status",
                "submit_delay",
            ):
                setattr(self, name, defaults[name].default)
            for name, value in settings.items():
                if name not in defaults:
                    raise AttributeError(name)
                setattr(self, name, value)

    def advance(self, task_id: str, stages: int = 1) -> str:
        """Move a manual task forward; returns the stage it now shows."""
        with self._lock:
            task = self._tasks[task_id]
            task.manual_stage = min(task.manual_stage + stages, len(task.stages) - 1)
            return task.stages[task.manual_stage]

    def submits(self) -> list[Submit]:
        with self._lock:
            return list(self._submits)

    def fetch_calls(self) -> list[list[str]]:
        """The ids carried by each `POST /suno/fetch`, in arrival order."""
        with self._lock:
            return [list(c) for c in self._fetch_calls]

    def calls_with(self, task_id: str) -> int:
        with self._lock:
            return sum(1 for c in self._fetch_calls if task_id in c)

    def task(self, task_id: str) -> FakeTask:
        with self._lock:
            return self._tasks[task_id]

    def served(self, task_id: str) -> list[str]:
        with self._lock:
            return list(self._tasks[task_id].served)

    def clip_ids(self, task_id: str) -> list[str]:
        with self._lock:
            return list(self._tasks[task_id].clip_ids)

    def polls_per_round(self, gap: float) -> dict[str, int]:
        """The most fetches each task got in one round (fake_tasks.most_in_a_round): 1 when
        only one poller at a time polls it."""
        with self._lock:
            return {t.id: most_in_a_round(t.fetched_at, gap) for t in self._tasks.values() if t.fetched_at}

    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def clip_urls(self, clip_id: str) -> dict[str, str]:
        """The final media addresses of a clip (never fetched by anyone)."""
        root = f"{self.base_url}/media/{clip_id}"
        return {
            "audio_url": f"{root}.mp3",
            "video_url": f"{root}.mp4",
            "image_url": f"{root}.jpeg",
            "image_large_url": f"{root}-large.jpeg",
        }

    # --- handlers ---------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.api_key}"

    async def _submit(self, request: web.Request) -> web.Response:
        action = request.match_info["action"].lower()
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            body = None
        headers = {k.lower(): v for k, v in request.headers.items()}
        with self._lock:
            record = Submit(request.path, headers, body if isinstance(body, dict) else {}, None)
            self._submits.append(record)
            status, reject, shape = self.submit_status, self.submit_reject, self.submit_shape
            script, manual, unknown = self.script, self.manual, self.unknown_stages
        if not self._authorized(request):
            return _fail(401, "unauthorized", "Invalid API key.")
        if action not in ("music", "lyrics"):
            return _fail(400, "invalid_action", f"Unknown action {action!r}.")
        if not isinstance(body, dict):
            return _fail(400, "invalid_request", "The body is not a JSON object.")
        if status != 200:
            return _fail(status, "fail_to_submit", "The relay exploded (fake).")
        if reject:
            return _fail(400, "invalid_prompt", "bad prompt")
        if action == "lyrics":
            stages, clips = list(LYRICS_STAGES), []
        else:
            if script == "unknown":
                stages = ["submitted", "streaming", *[WEIRD] * unknown, "complete"]
            else:
                stages = list(SCRIPTS[script])
            clips = [str(uuid.uuid4()), str(uuid.uuid4())]
        task = FakeTask(str(uuid.uuid4()), action.upper(), body, stages, clips, time.time(), manual)
        with self._lock:
            self._tasks[task.id] = task
            record.task_id = task.id
            delay = self.submit_delay
        if delay:
            await asyncio.sleep(delay)
        if shape == "record":
            return _ok(self._render(task, task.stages[0]))
        return _ok(task.id)

    async def _fetch(self, request: web.Request) -> web.Response:
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            body = None
        ids = body.get("ids") if isinstance(body, dict) else None
        if not isinstance(ids, list):
            ids = []
        with self._lock:
            self._fetch_calls.append([str(i) for i in ids])
            self._in_flight += 1
            status = self.fetch_status
        try:
            await self._hold(time.monotonic())
            if not self._authorized(request):
                return _fail(401, "unauthorized", "Invalid API key.")
            if status != 200:
                return _fail(status, "fail_to_fetch_task", "The relay exploded (fake).")
            items = []
            for task_id in dict.fromkeys(str(i) for i in ids):
                with self._lock:
                    task = self._tasks.get(task_id)
                    stage = self._next_stage(task) if task is not None else None
                if task is not None and stage is not None:
                    items.append(self._render(task, stage))
            return _ok(items)
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _hold(self, since: float) -> None:
        """Hold a fetch for `fetch_delay` seconds, re-read while waiting (lowering it releases
        held fetches; stopping the fake releases them all)."""
        while not self._stopping:
            with self._lock:
                delay = self.fetch_delay
            if time.monotonic() - since >= delay:
                return
            await asyncio.sleep(0.02)

    async def _fetch_one(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _fail(401, "unauthorized", "Invalid API key.")
        with self._lock:
            task = self._tasks.get(request.match_info["task_id"])
            stage = self._next_stage(task) if task is not None else None
        if task is None or stage is None:
            return _fail(400, "task_not_exist", "No such task.")
        return _ok(self._render(task, stage))

    def _next_stage(self, task: FakeTask) -> str:
        """Count one more fetch of `task` and the stage it shows (call under the lock)."""
        task.fetches += 1
        task.fetched_at.append(time.monotonic())
        if task.manual:
            index = task.manual_stage
        elif self.stage_seconds:
            index = int((time.time() - task.created) / self.stage_seconds)
        else:
            index = (task.fetches - 1) // max(1, self.fetches_per_stage)
        stage = task.stages[min(index, len(task.stages) - 1)]
        task.served.append(stage)
        return stage

    def _render(self, task: FakeTask, stage: str) -> dict[str, Any]:
        done = stage in ("complete", "error")
        now = int(time.time())
        record: dict[str, Any] = {
            "task_id": task.id,
            "notify_hook": "",
            "action": task.action,
            "status": _TASK_STATUS[stage],
            "fail_reason": FAIL_REASON if stage == "error" else "",
            "submit_time": int(task.created),
            "start_time": int(task.created) if stage not in ("submitted", "queued") else 0,
            "finish_time": now if done else 0,
            "progress": "100%" if done else "0%",
        }
        if task.action == "LYRICS":
            record["data"] = {
                "id": task.id,
                "status": stage,
                "title": LYRICS_TITLE if stage == "complete" else "",
                "text": LYRICS_TEXT if stage == "complete" else "",
            }
        else:
            record["data"] = [self._clip(task, i, stage) for i in range(len(task.clip_ids))]
        return record

    def _clip(self, task: FakeTask, position: int, stage: str) -> dict[str, Any]:
        clip_id = task.clip_ids[position]
        body = task.body
        mv = str(body.get("mv") or "chirp-v3-0")
        metadata: dict[str, Any] = {
            "tags": body.get("tags") or "",
            "prompt": body.get("prompt") or "",
            "gpt_description_prompt": body.get("gpt_description_prompt"),
            "type": "gen",
            "stream": True,
            "history": None,
            "duration": None,
            "error_type": None,
            "error_message": None,
        }
        urls = dict.fromkeys(("audio_url", "video_url", "image_url", "image_large_url"), "")
        if stage in ("streaming", WEIRD):
            urls["audio_url"] = f"{self.base_url}/stream/{clip_id}"
        elif stage == "complete":
            urls = self.clip_urls(clip_id)
            metadata["duration"] = DURATIONS[position % len(DURATIONS)]
        elif stage in ("error", "clip_error"):
            metadata["error_type"] = "moderation"
            metadata["error_message"] = CLIP_ERROR
        return {
            "id": clip_id,
            **urls,
            "is_video_pending": stage != "complete",
            "major_model_version": "v" + mv.partition("-v")[2].replace("-", ".") if "-v" in mv else "",
            "model_name": mv,
            "is_liked": False,
            "user_id": "fake-user",
            "display_name": "fake",
            "handle": "fake",
            "is_handle_updated": False,
            "is_trashed": False,
            "reaction": None,
            "created_at": "2026-01-01T00:00:00.000Z",
            "status": _CLIP_STATUS.get(stage, stage),
            "title": body.get("title") or "",
            "play_count": 0,
            "upvote_count": 0,
            "is_public": False,
            "metadata": metadata,
        }


def _ok(data: Any) -> web.Response:
    return web.Response(
        body=orjson.dumps({"code": "success", "message": "", "data": data}),
        content_type="application/json",
    )


def _fail(status: int, code: str, message: str) -> web.Response:
    return web.Response(
        status=status,
        body=orjson.dumps({"code": code, "message": message, "data": None}),
        content_type="application/json",
    )
