"""A fake OpenAI Videos API (Sora) on 127.0.0.1, built on fake_tasks (timelines, recording).
The gateway's `base_url` for it is `base_url` = http://127.0.0.1:<port>/v1, as for OpenAI.

Auth: `Authorization: Bearer <api_key>`; a missing or wrong key is HTTP 401 with code
invalid_api_key (null when missing). Every answer carries an `x-request-id` header.

  POST /v1/videos          multipart (what the SDK always sends: fields prompt, model,
                           seconds, size, and `input_reference` as a file or as the fields
                           input_reference[image_url] / input_reference[file_id]) or JSON
                           (input_reference an object). prompt is required; seconds "4" | "8"
                           | "12" (a string; default "4"); size 720x1280 (default) | 1280x720 |
                           1024x1792 | 1792x1024; model any string (default sora-2).
                           -> the Video object, status "queued"
  GET  /v1/videos/{id}     the Video object (a poll): {id, object "video", model, status,
                           progress, created_at, completed_at, expires_at, seconds, size,
                           prompt, remixed_from_video_id, error}
  GET  /v1/videos          list: after (an id; an unknown one gives an empty page), limit
                           (1-100, default 20), order (asc | desc, default desc) ->
                           {"object": "list", "data", "first_id", "last_id", "has_more"}
  GET  /v1/videos/{id}/content?variant=video|thumbnail|spritesheet
                           video/mp4 (with an AAC track), image/webp, image/jpeg; 404 until
                           the video is completed
  POST /v1/videos/{id}/remix   JSON {prompt}; the source must be completed (else 400); a new
                           video with remixed_from_video_id, the source's model/seconds/size
  DELETE /v1/videos/{id}   {"id", "object": "video.deleted", "deleted": true}; afterwards the
                           video is 404 everywhere (the job stays in `jobs`, extra deleted)
Generic stages show as: queued "queued" (progress 0), running "in_progress" (40), success
"completed" (100, completed_at, expires_at one hour later), failed "failed" (error {code
FAIL_CODE, message `fail_reason`}), unknown `UNKNOWN_STATUS` (70). Creates, remixes and lists
show a job's current stage without counting a poll.

Errors are {"error": {"message", "type", "param", "code"}}: invalid_request_error for 400 /
401 / 404, `submit_reject` 400 moderation_blocked, `submit_status` / `poll_status` 429
(type requests, code rate_limit_exceeded) or server_error for anything else.

Not modelled: the newer edits / extensions / characters endpoints, `openai-poll-after-ms`,
input_reference checks (size must match, image types) and file ids, per-model limits (which
sizes sora-2 refuses), organisation/project headers, content Range requests, real expiry,
and the length or size of the returned clip (always the same 1 s 160x96 MP4).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.support import task_fixtures
from tests.support.fake_tasks import (
    FAILED,
    QUEUED,
    RUNNING,
    SUCCESS,
    UNKNOWN,
    BodyError,
    Call,
    FakeTaskUpstream,
    Job,
    json_response,
)

UNKNOWN_STATUS = "moderating"
FAIL_CODE = "video_generation_failed"
FAIL_MESSAGE = "The video could not be generated (fake failure)."
STATUSES = {
    QUEUED: "queued",
    RUNNING: "in_progress",
    SUCCESS: "completed",
    FAILED: "failed",
    UNKNOWN: UNKNOWN_STATUS,
}
SECONDS = ("4", "8", "12")
SIZES = ("720x1280", "1280x720", "1024x1792", "1792x1024")
VARIANTS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "video": ("video/mp4", lambda: task_fixtures.mp4(audio=True)),
    "thumbnail": ("image/webp", task_fixtures.webp_thumbnail),
    "spritesheet": ("image/jpeg", task_fixtures.jpeg_spritesheet),
}
_PROGRESS = {QUEUED: 0, RUNNING: 40, UNKNOWN: 70, SUCCESS: 100}
EXPIRY_SECONDS = 3600


@dataclass
class FakeOpenAIVideos(FakeTaskUpstream):
    api_key: str = "sk-fake-videos"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def _vendor_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/videos", self._create)
        app.router.add_get("/v1/videos", self._list)
        app.router.add_get("/v1/videos/{video_id}", self._retrieve)
        app.router.add_delete("/v1/videos/{video_id}", self._delete)
        app.router.add_get("/v1/videos/{video_id}/content", self._content)
        app.router.add_post("/v1/videos/{video_id}/remix", self._remix)

    # --- helpers ---------------------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        header = request.headers.get("Authorization", "")
        if header == f"Bearer {self.api_key}":
            return None
        call = self._call(request)
        if not header:
            self._note(call, note="openai auth: missing")
            return _error(401, "You didn't provide an API key.", code=None)
        self._note(call, note="openai auth: wrong key or scheme")
        return _error(401, "Incorrect API key provided.", code="invalid_api_key")

    def _live(self, video_id: str) -> Job | None:
        job = self._find(video_id)
        return None if job is None or job.extra.get("deleted") else job

    def _gate_error(self, status: int) -> web.Response:
        if status == 429:
            return _error(429, "Rate limit reached (fake).", "requests", code="rate_limit_exceeded")
        return _error(status, "The server had an error while processing your request (fake).", "server_error")

    def _video(self, job: Job, stage: str) -> dict[str, Any]:
        params = job.params
        finished = int(job.finished) if job.finished and stage in (SUCCESS, FAILED) else None
        progress = _PROGRESS.get(stage, _PROGRESS[RUNNING])
        return {
            "id": job.id,
            "object": "video",
            "model": params["model"],
            "status": STATUSES[stage],
            "progress": progress,
            "created_at": int(job.created),
            "completed_at": finished,
            "expires_at": finished + EXPIRY_SECONDS if finished and stage == SUCCESS else None,
            "seconds": params["seconds"],
            "size": params["size"],
            "prompt": params["prompt"],
            "remixed_from_video_id": params.get("remixed_from_video_id"),
            "error": {"code": FAIL_CODE, "message": self._failure(FAIL_MESSAGE)} if stage == FAILED else None,
        }

    def _begin(self, call: Call, params: dict[str, Any]) -> web.Response:
        job = self._new_job(call, "video", params, job_id=f"video_{uuid.uuid4().hex}")
        return _json(200, self._video(job, self._peek(job)))

    # --- handlers --------------------------------------------------------------------

    async def _create(self, request: web.Request) -> web.Response:
        try:
            call = await self._read_body(request)
        except BodyError as exc:
            return self._refused(request) or _error(400, f"Could not parse the request body: {exc}")
        denied = self._refused(request)
        if denied is not None:
            return denied
        status, reject = self._gate("submit")
        if status != 200:
            return self._gate_error(status)
        if call.json is not None and not isinstance(call.json, dict):
            return _error(400, "The body must be a JSON object.")
        if reject:
            return _error(
                400, "Your request was blocked by our moderation system (fake).", code="moderation_blocked"
            )
        params = call.params()
        prompt = params.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return _error(
                400,
                "Missing required parameter: 'prompt'.",
                param="prompt",
                code="missing_required_parameter",
            )
        checks = (("seconds", SECONDS, "4"), ("size", SIZES, "720x1280"))
        for name, allowed, default in checks:
            value = params.setdefault(name, default)
            if value not in allowed:
                message = f"Invalid value for '{name}': expected one of {', '.join(allowed)}."
                return _error(400, message, param=name, code="invalid_value")
        model = params.setdefault("model", "sora-2")
        if not isinstance(model, str) or not model:
            return _error(400, "Invalid value for 'model'.", param="model", code="invalid_value")
        return self._begin(call, params)

    async def _retrieve(self, request: web.Request) -> web.Response:
        call = self._poll_call(request, request.match_info["video_id"])
        await self._hold()
        denied = self._refused(request)
        if denied is not None:
            return denied
        status, _ = self._gate("poll")
        if status != 200:
            return self._gate_error(status)
        video_id = request.match_info["video_id"]
        job = self._live(video_id)
        if job is None:
            return _not_found(video_id)
        return _json(200, self._video(job, self._step(call, job)))

    async def _list(self, request: web.Request) -> web.Response:
        denied = self._refused(request)
        if denied is not None:
            return denied
        query = request.query
        order = query.get("order", "desc")
        if order not in ("asc", "desc"):
            return _error(400, "Invalid value for 'order'.", param="order", code="invalid_value")
        try:
            limit = int(query.get("limit", "20"))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 100:
            return _error(
                400, "Invalid value for 'limit': expected 1 to 100.", param="limit", code="invalid_value"
            )
        jobs = [j for j in self._all_jobs() if not j.extra.get("deleted")]
        if order == "desc":
            jobs.reverse()
        after = query.get("after")
        if after:
            ids = [j.id for j in jobs]
            jobs = jobs[ids.index(after) + 1 :] if after in ids else []
        page = jobs[:limit]
        data = [self._video(j, self._peek(j)) for j in page]
        return _json(
            200,
            {
                "object": "list",
                "data": data,
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
                "has_more": len(jobs) > limit,
            },
        )

    async def _content(self, request: web.Request) -> web.Response:
        video_id = request.match_info["video_id"]
        self._note(self._call(request), kind="download", job_id=video_id)
        denied = self._refused(request)
        if denied is not None:
            return denied
        variant = request.query.get("variant", "video")
        if variant not in VARIANTS:
            message = "Invalid value for 'variant': expected video, thumbnail or spritesheet."
            return _error(400, message, param="variant", code="invalid_value")
        job = self._live(video_id)
        if job is None:
            return _not_found(video_id)
        if self._peek(job) != SUCCESS:
            return _error(
                404, f"Video {video_id} is not ready; its content is available once it has completed."
            )
        content_type, make = VARIANTS[variant]
        return web.Response(
            body=make(), headers={"Content-Type": content_type, "x-request-id": _request_id()}
        )

    async def _remix(self, request: web.Request) -> web.Response:
        try:
            call = await self._read_body(request)
        except BodyError as exc:
            return self._refused(request) or _error(400, f"Could not parse the request body: {exc}")
        denied = self._refused(request)
        if denied is not None:
            return denied
        status, reject = self._gate("submit")
        if status != 200:
            return self._gate_error(status)
        if reject:
            return _error(
                400, "Your request was blocked by our moderation system (fake).", code="moderation_blocked"
            )
        source_id = request.match_info["video_id"]
        source = self._live(source_id)
        if source is None:
            return _not_found(source_id)
        prompt = call.params().get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return _error(
                400,
                "Missing required parameter: 'prompt'.",
                param="prompt",
                code="missing_required_parameter",
            )
        if self._peek(source) != SUCCESS:
            return _error(400, f"Video {source_id} has not completed; only completed videos can be remixed.")
        params = {k: source.params[k] for k in ("model", "seconds", "size")}
        params.update(prompt=prompt, remixed_from_video_id=source_id)
        return self._begin(call, params)

    async def _delete(self, request: web.Request) -> web.Response:
        denied = self._refused(request)
        if denied is not None:
            return denied
        video_id = request.match_info["video_id"]
        self._note(self._call(request), job_id=video_id)
        job = self._live(video_id)
        if job is None:
            return _not_found(video_id)
        self._mark(job, deleted=True)
        return _json(200, {"id": video_id, "object": "video.deleted", "deleted": True})


def _request_id() -> str:
    return f"req_{uuid.uuid4().hex}"


def _json(status: int, body: Any) -> web.Response:
    return json_response(status, body, {"x-request-id": _request_id()})


def _error(
    status: int,
    message: str,
    error_type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> web.Response:
    return _json(status, {"error": {"message": message, "type": error_type, "param": param, "code": code}})


def _not_found(video_id: str) -> web.Response:
    return _error(404, f"Video with id '{video_id}' not found.")
