"""`vidu` protocol: ShengShu's Vidu enterprise API (https://api.vidu.com), all jobs asynchronous.

Auth: `Authorization: Token <api_key>`. JSON in, JSON out.
Submit, by action:
  text2audio   `POST /ent/v2/text2audio` {model, prompt, duration, seed, ...}
  lip-sync     `POST /ent/v2/lip-sync` {video_url, audio_url | text + voice_id, speed, volume,
               ref_photo_url, ...} (no model field upstream)
  text2video   `POST /ent/v2/text2video` {model, prompt, duration, seed, aspect_ratio, resolution}
  image2video  `POST /ent/v2/img2video` {model, images: [start], prompt, duration, seed,
               resolution}, or `POST /ent/v2/start-end2video` with images [start, end] when the
               job has an end frame
The fields of text2audio and lip-sync jobs are the client's own (validated) Vidu body; video
jobs are built from the canonical video fields with `metadata` merged over them. Images go as
URLs or data: URLs. The answer is the task: {"task_id", "state", ...}.
Query: `GET /ent/v2/tasks/{id}/creations` → {"state": created | queueing | processing |
success | failed, "err_code", "creations": [{"id", "url", "cover_url", "watermarked_url"}]}.
Errors: the HTTP status with {"code", "reason", "message", "metadata"}; `reason` is one of
Vidu's error words (CreditInsufficient, TooManyRequests, FieldInvalid, ...). Remix is not a
Vidu operation.
"""

from __future__ import annotations

from typing import Any

import orjson

from unigate.config import ProviderConfig
from unigate.providers.base import (
    Provider,
    ProviderContext,
    RouteFailed,
    SubmitResult,
    Target,
    TaskRef,
    TaskSubmission,
    Timeouts,
    UpstreamTask,
)
from unigate.providers.headers import upstream_headers
from unigate.providers.http import UpstreamHTTP
from unigate.providers.task_http import (
    Answer,
    answer_error,
    aspect_ratio,
    content_type_of,
    data_url,
    exchange,
    file_data_url,
    objects,
    path_id,
    percent,
    poll_each,
    query_timeouts,
    text,
)
from unigate.tasks.model import UNKNOWN

PROVIDER_TYPE = "vidu"
DEFAULT_BASE_URL = "https://api.vidu.com"
VENDOR = "Vidu"
_PATHS = {
    "text2audio": "/ent/v2/text2audio",
    "lip-sync": "/ent/v2/lip-sync",
    "text2video": "/ent/v2/text2video",
    "image2video": "/ent/v2/img2video",
}
_START_END_PATH = "/ent/v2/start-end2video"
_VIDEO_ACTIONS = ("text2video", "image2video")
_STATES = {
    "created": "QUEUED",
    "queueing": "QUEUED",
    "processing": "IN_PROGRESS",
    "success": "SUCCESS",
    "failed": "FAILURE",
}
# Refusals that concern the provider's account or load, not the client's request, by the HTTP
# status they mean (Vidu sends CreditInsufficient under a 400): another route may take the job.
_REASON_STATUS = {
    "CreditInsufficient": 429,
    "QuotaExceeded": 429,
    "TooManyRequests": 429,
    "SystemThrottling": 429,
    "OperationInProcess": 429,
    "ModelUnavailable": 502,
    "Unauthorized": 401,
    "Forbidden": 403,
}


class ViduProvider(Provider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset(_PATHS)

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        credentials = {"Authorization": f"Token {config.api_key}"} if config.api_key else {}
        headers = upstream_headers({"Content-Type": "application/json"}, config.headers, credentials)
        self.http = UpstreamHTTP(config.base_url or DEFAULT_BASE_URL, headers, config)
        self.secrets = [config.api_key] if config.api_key else []

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def submit_task(self, job: TaskSubmission, target: Target) -> SubmitResult:
        if job.action not in _PATHS:
            await super().submit_task(job, target)
        path, body = request(job, target.upstream_model)
        answer = await exchange(self.http, "POST", path, target.timeouts, orjson.dumps(body))
        self._check(answer)
        task_id = text(answer.body, "task_id") or text(answer.body, "id")
        if not task_id:
            raise RouteFailed("The Vidu upstream's answer has no task id.")
        return SubmitResult(task_id)

    async def poll_tasks(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        limits = query_timeouts(timeouts)

        async def query(ref: TaskRef) -> UpstreamTask | None:
            path = f"/ent/v2/tasks/{path_id(ref.upstream_id)}/creations"
            answer = await exchange(self.http, "GET", path, limits)
            self._check(answer)
            return task_state(ref.upstream_id, ref.action, answer.body)

        return await poll_each(refs, query, VENDOR)

    def _check(self, answer: Answer) -> None:
        reason = text(answer.body, "reason")
        if answer.status < 400 and answer.is_json and not reason:
            return
        message = text(answer.body, "message") or reason
        code = reason if reason.isidentifier() else None
        status = _REASON_STATUS.get(reason, answer.status)  # an error under a 2xx: no answer
        detail = reason or ("unreadable answer" if answer.status < 400 else "")
        raise answer_error(VENDOR, answer, message, self.secrets, code, status=status, detail=detail)


def task_state(upstream_id: str, action: str, body: dict[str, Any]) -> UpstreamTask:
    status = _STATES.get(text(body, "state"), UNKNOWN)
    task = UpstreamTask(upstream_id, status, progress=percent(body.get("progress")))
    if status == "SUCCESS":
        task.progress = 100
        task.outputs = [_creation(c, action) for c in objects(body, "creations") if text(c, "url")]
    elif status == "FAILURE":
        # The bare err_code: Vidu-format answers relay fail_reason as their own `err_code`.
        code = text(body, "err_code")
        task.fail_reason = code or "The Vidu task failed."
        task.error_type = code or "generation_failed"
    return task


def _creation(creation: dict[str, Any], action: str) -> dict[str, Any]:
    url = text(creation, "url")
    default = "" if action == "text2audio" else "video/mp4"
    out: dict[str, Any] = {"url": url}
    for key in ("cover_url", "watermarked_url", "id"):
        if text(creation, key):
            out[key] = text(creation, key)
    if "cover_url" in out:
        out["thumbnail_url"] = out["cover_url"]  # what the OpenAI-style `thumbnail` variant reads
    if content_type := content_type_of(url, default):
        out["content_type"] = content_type
    return out


# -- request bodies --


def request(job: TaskSubmission, model: str) -> tuple[str, dict[str, Any]]:
    """The path and JSON body for a job."""
    if job.action in _VIDEO_ACTIONS:
        return _video(job, model)
    # text2audio / lip-sync: the client's own Vidu body, already validated at the edge.
    body = {k: v for k, v in job.fields.items() if v is not None and k != "callback_url"}
    if job.action == "lip-sync":
        body.pop("model", None)
    else:
        body["model"] = model
    return _PATHS[job.action], body


def _video(job: TaskSubmission, model: str) -> tuple[str, dict[str, Any]]:
    fields = job.fields
    body: dict[str, Any] = {"model": model}
    if isinstance(fields.get("prompt"), str) and fields["prompt"]:
        body["prompt"] = fields["prompt"]
    seconds = fields.get("seconds")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        body["duration"] = max(1, round(seconds))
    if isinstance(fields.get("seed"), int):
        body["seed"] = fields["seed"]
    if resolution := _resolution(fields):
        body["resolution"] = resolution
    path = _PATHS[job.action]
    if job.action == "text2video":
        given = fields.get("aspect_ratio")
        # A ratio the client named goes as is (newer models take more than the three).
        if aspect := given if isinstance(given, str) and given else aspect_ratio(fields):
            body["aspect_ratio"] = aspect
    else:
        images = [image for key in ("image", "image_tail") if (image := _image(job, key))]
        body["images"] = images
        if len(images) == 2:
            path = _START_END_PATH
    metadata = fields.get("metadata")
    if isinstance(metadata, dict):
        body.update(metadata)  # vendor extras (movement_amplitude, bgm, style ...) pass through
    body.pop("callback_url", None)  # the gateway delivers its own signed callbacks
    body["model"] = model
    return path, body


def _image(job: TaskSubmission, key: str) -> str | None:
    upload = job.files.get(key)
    if upload is not None:
        return file_data_url(upload)
    ref = job.fields.get(key)
    return data_url(ref) if isinstance(ref, str) and ref else None


def _resolution(fields: dict[str, Any]) -> str | None:
    """Vidu's resolution class for an explicit size: its short side, to the nearest class."""
    width, height = fields.get("width"), fields.get("height")
    if not (isinstance(width, int) and isinstance(height, int)) or min(width, height) <= 0:
        return None
    short = min(width, height)
    return min(("360p", "540p", "720p", "1080p"), key=lambda name: abs(int(name[:-1]) - short))
