"""A fake Vidu enterprise API on 127.0.0.1 (gateway `base_url` = `root`; the paths carry
/ent/v2), built on fake_tasks (timelines, recording, /files/ serving).

Auth: `Authorization: Token <api_key>` only; a Bearer header, another key or none is HTTP 401
{"code": 401, "reason": "Unauthorized", ...}.

  POST /ent/v2/text2audio        {model (required), prompt (required, <= 1500 chars), duration
                                 (2-10, default 10), seed, callback_url, payload}
  POST /ent/v2/lip-sync          {video_url (required), audio_url | text (4-2000 chars) +
                                 voice_id, speed (0.5-2), volume (0-10), ref_photo_url,
                                 callback_url, payload} (no model)
  POST /ent/v2/text2video        {model, prompt (required), duration, seed, aspect_ratio,
                                 resolution, movement_amplitude, bgm, off_peak, payload, ...}
  POST /ent/v2/img2video         {model, images: [one image], prompt, ...}
  POST /ent/v2/start-end2video   {model, images: [start, end], prompt, ...}
  (images are http(s) URLs or data:image/...;base64 URLs)
  -> the task: {"task_id", "state": "created", "model", "prompt", "duration", "seed",
     "credits", "created_at" (ISO 8601), plus the other fields echoed}
  GET /ent/v2/tasks/{id}/creations -> {"id", "state", "err_code", "credits", "payload",
     "bgm", "off_peak", "creations": [{"id", "url", "cover_url", "watermarked_url"}]}
Generic stages show as: queued "queueing" (the create answer says "created"), running
"processing", success "success", failed "failed" with `err_code` (`fail_reason`, default
CreationPolicyViolation), unknown `UNKNOWN_STATE`. Creations exist only on success:
text2audio -> an MP3 at /files/<task>.mp3 (cover_url ""); lip-sync and videos -> an MP4 at
/files/<task>.mp4 (with an AAC track for lip-sync and for videos asked with `bgm`), a JPEG
cover at /files/<task>-cover.jpeg and the same MP4 as the watermarked_url.

Errors are {"code": <HTTP status>, "reason", "message", "metadata": {}}: bad JSON or fields
400 BadRequest, `submit_reject` 400 with `reject_reason` (BadRequest by default; e.g.
CreditInsufficient), unknown task 404 TaskNotFound, `submit_status`/`poll_status` 429
TooManyRequests, 503 ServiceUnavailable, anything else InternalServiceFailure.

Not modelled: callbacks and their signatures, the task list and cancel endpoints, other
Vidu tools (reference2video, timing2audio, audio-tts, upscale, ...), per-model limits on
duration/resolution, credit accounting (credits is a fixed figure), result URL expiry, and
the size or length of the returned media (always the same 1 s clip).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
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
    FakeTaskUpstream,
    Job,
    json_response,
)

ACTIONS = ("text2audio", "lip-sync", "text2video", "img2video", "start-end2video")
UNKNOWN_STATE = "scheduling"
FAIL_CODE = "CreationPolicyViolation"
CREDITS = 4
STATES = {
    QUEUED: "queueing",
    RUNNING: "processing",
    SUCCESS: "success",
    FAILED: "failed",
    UNKNOWN: UNKNOWN_STATE,
}
_STATUS_REASONS = {400: "BadRequest", 401: "Unauthorized", 404: "TaskNotFound", 429: "TooManyRequests"}
_STATUS_REASONS |= {503: "ServiceUnavailable"}
_RATIOS = ("16:9", "9:16", "1:1", "4:3", "3:4")
_RESOLUTIONS = ("360p", "540p", "720p", "1080p")


@dataclass
class FakeVidu(FakeTaskUpstream):
    api_key: str = "vidu-key"
    reject_reason: str = "BadRequest"

    @property
    def base_url(self) -> str:
        return self.root

    def _vendor_routes(self, app: web.Application) -> None:
        for action in ACTIONS:
            app.router.add_post(f"/ent/v2/{action}", self._submit)
        app.router.add_get("/ent/v2/tasks/{task_id}/creations", self._creations)

    def _refused(self, request: web.Request) -> web.Response | None:
        header = request.headers.get("Authorization", "")
        if header == f"Token {self.api_key}":
            return None
        scheme = header.partition(" ")[0]
        why = "missing" if not header else ("scheme must be Token" if scheme != "Token" else "wrong key")
        self._note(self._call(request), note=f"vidu auth: {why}")
        return _error(401, "Unauthorized", "Invalid or missing API key.")

    async def _submit(self, request: web.Request) -> web.Response:
        action = request.path.rsplit("/", 1)[-1]
        try:
            call = await self._read_body(request)
        except BodyError as exc:
            return self._refused(request) or _error(400, "BadRequest", f"Invalid JSON body: {exc}")
        denied = self._refused(request)
        if denied is not None:
            return denied
        body = call.json
        if not isinstance(body, dict):
            return _error(400, "BadRequest", "The body must be a JSON object.")
        status, reject = self._gate("submit")
        if status != 200:
            return _error(
                status, _STATUS_REASONS.get(status, "InternalServiceFailure"), "Service failure (fake)."
            )
        if reject:
            return _error(400, self.reject_reason, "The request was rejected (fake).")
        problem = _validate(action, body)
        if problem is not None:
            return _error(400, "BadRequest", problem)
        seed = body.get("seed")
        seed = seed if isinstance(seed, int) and seed else random.randint(1, 2**31 - 1)
        job = self._new_job(call, action, dict(body), job_id=str(uuid.uuid4().int)[:18], extra={"seed": seed})
        task: dict[str, Any] = {"task_id": job.id, "state": "created"}
        if action == "lip-sync":
            task.update({k: v for k, v in body.items() if k != "callback_url"})
        else:
            default_duration = 10 if action == "text2audio" else 4
            echoed = {k: v for k, v in body.items() if k not in ("callback_url", "seed", "duration")}
            task.update(echoed)
            task.update(
                {
                    "model": body.get("model", ""),
                    "prompt": body.get("prompt", ""),
                    "duration": body.get("duration", default_duration),
                    "seed": job.extra["seed"],
                }
            )
        task["credits"] = CREDITS
        task["created_at"] = _iso(job.created)
        return json_response(200, task)

    async def _creations(self, request: web.Request) -> web.Response:
        call = self._poll_call(request, request.match_info["task_id"])
        await self._hold()
        denied = self._refused(request)
        if denied is not None:
            return denied
        status, _ = self._gate("poll")
        if status != 200:
            return _error(
                status, _STATUS_REASONS.get(status, "InternalServiceFailure"), "Service failure (fake)."
            )
        job = self._find(request.match_info["task_id"])
        if job is None:
            return _error(404, "TaskNotFound", "Task not found.")
        stage = self._step(call, job)
        return json_response(200, self._render(job, stage))

    def _render(self, job: Job, stage: str) -> dict[str, Any]:
        params = job.params
        return {
            "id": job.id,
            "state": STATES[stage],
            "err_code": self._failure(FAIL_CODE) if stage == FAILED else "",
            "credits": CREDITS,
            "payload": params.get("payload", ""),
            "bgm": bool(params.get("bgm", False)),
            "off_peak": bool(params.get("off_peak", False)),
            "creations": self._creations_of(job) if stage == SUCCESS else [],
        }

    def _creations_of(self, job: Job) -> list[dict[str, Any]]:
        creation_id = f"{job.id}-c0"
        if job.kind == "text2audio":
            url = self._publish(f"{job.id}.mp3", "audio/mpeg", task_fixtures.mp3_clip(), job.id)
            return [{"id": creation_id, "url": url, "cover_url": "", "watermarked_url": ""}]
        audio = job.kind == "lip-sync" or bool(job.params.get("bgm"))
        url = self._publish(f"{job.id}.mp4", "video/mp4", task_fixtures.mp4(audio=audio), job.id)
        cover = self._publish(f"{job.id}-cover.jpeg", "image/jpeg", task_fixtures.jpeg_cover(), job.id)
        return [{"id": creation_id, "url": url, "cover_url": cover, "watermarked_url": url}]


def _validate(action: str, body: dict[str, Any]) -> str | None:
    """Why Vidu would refuse these fields, or None."""
    if action == "lip-sync":
        return _validate_lip_sync(body)
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model is required"
    prompt = body.get("prompt")
    if action in ("text2audio", "text2video") and (not isinstance(prompt, str) or not prompt.strip()):
        return "prompt is required"
    if prompt is not None and (
        not isinstance(prompt, str) or len(prompt) > (1500 if action == "text2audio" else 2000)
    ):
        return "prompt is too long"
    duration = body.get("duration")
    if duration is not None:
        low, high = (2, 10) if action == "text2audio" else (1, 16)
        if not _number(duration) or not low <= duration <= high:
            return f"duration must be from {low} to {high}"
    if body.get("seed") is not None and (not isinstance(body["seed"], int) or isinstance(body["seed"], bool)):
        return "seed must be an integer"
    if body.get("aspect_ratio") is not None and body["aspect_ratio"] not in _RATIOS:
        return "aspect_ratio is not supported"
    if body.get("resolution") is not None and body["resolution"] not in _RESOLUTIONS:
        return "resolution is not supported"
    wanted = {"img2video": 1, "start-end2video": 2}.get(action)
    if wanted is not None:
        images = body.get("images")
        if not isinstance(images, list) or len(images) != wanted:
            return f"images must hold {wanted} image(s)"
        if not all(_image_ok(i) for i in images):
            return "images must be http(s) URLs or base64 data: URLs"
    return None


def _validate_lip_sync(body: dict[str, Any]) -> str | None:
    if not _url(body.get("video_url")):
        return "video_url is required"
    audio, text = body.get("audio_url"), body.get("text")
    if audio is None and text is None:
        return "one of audio_url and text is required"
    if audio is not None and not _url(audio):
        return "audio_url must be an http(s) URL"
    if audio is None and (not isinstance(text, str) or not 4 <= len(text) <= 2000):
        return "text must be 4 to 2000 characters"
    speed, volume = body.get("speed"), body.get("volume")
    if speed is not None and (not _number(speed) or not 0.5 <= speed <= 2):
        return "speed must be from 0.5 to 2"
    if volume is not None and (not _number(volume) or not 0 <= volume <= 10):
        return "volume must be from 0 to 10"
    return None


def _url(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def _image_ok(value: Any) -> bool:
    return _url(value) or (isinstance(value, str) and value.startswith("data:image/") and ";base64," in value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _error(status: int, reason: str, message: str) -> web.Response:
    return json_response(status, {"code": status, "reason": reason, "message": message, "metadata": {}})
