"""A fake Gemini API for Veo video generation (long-running operations) on 127.0.0.1, built on
fake_tasks (timelines, recording, /files/ serving). The gateway's `base_url` for it is
`base_url` = `root` (the paths carry /v1beta, as for the Gemini API).

Auth: `x-goog-api-key: <api_key>` or `?key=<api_key>`. A missing or wrong key is HTTP 401
UNAUTHENTICATED; with `google_key_errors=True` it is what Google really answers instead: a
wrong key 400 INVALID_ARGUMENT "API key not valid. Please pass a valid API key.", none 403
PERMISSION_DENIED.

  POST /v1beta/models/{model}:predictLongRunning
      {"instances": [{"prompt", "image"?: {"bytesBase64Encoded", "mimeType"}, ...}],
       "parameters": {"aspectRatio" (16:9 | 9:16), "durationSeconds", "sampleCount" (1-4),
       "resolution" (720p | 1080p), "generateAudio", "negativePrompt", "seed", ...}}
      exactly one instance, with a prompt or an image; the image must be valid base64 of
      image/png | image/jpeg | image/webp.
      -> {"name": "models/{model}/operations/{id}"}
  GET /v1beta/models/{model}/operations/{id}   (a poll; the model must match)
      running: {"name"}; success: {"name", "done": true, "response": {"@type": RESPONSE_TYPE,
      "generateVideoResponse": {"generatedSamples": [{"video": {"uri"}}] x sampleCount}}};
      failed: {"name", "done": true, "error": {"code": 13, "message", "status": "INTERNAL"}}
      (code is the google.rpc code, not an HTTP status); filtered (script "filtered"): done
      with "raiMediaFilteredCount": 1, "raiMediaFilteredReasons": [reason] and no samples;
      unknown: not done, with an undocumented `metadata` {"@type": METADATA_TYPE, "state":
      UNKNOWN_STATE}
  GET /v1beta/files/{file}:download?alt=media   needs the key; with `redirect_downloads`
      (default) a 302 to /download-data/{file}.mp4, which needs no key (like Google's signed
      storage link), else the MP4 itself. File ids are lower-case alphanumeric. The MP4 has
      an AAC track for veo-3* models unless generateAudio is false.

Errors are {"error": {"code": <HTTP status>, "message", "status"}}: bad body 400
INVALID_ARGUMENT, `submit_reject` 400 INVALID_ARGUMENT, unknown operation / file 404
NOT_FOUND, `submit_status` / `poll_status` 429 RESOURCE_EXHAUSTED, 500 INTERNAL, 503
UNAVAILABLE (others UNKNOWN).

Not modelled: Vertex AI (`:fetchPredictOperation`), operation listing / cancel, the Files
API metadata (GET /v1beta/files/{id}) and file expiry, lastFrame / referenceImages / video
extension checks, per-model parameter limits (durations, resolutions, personGeneration
rules), RAI filtering of the input, quota details in error `details`, and the length or
size of the returned clip (always the same 1 s 160x96 MP4).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

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

FILTERED = "filtered"
RESPONSE_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse"
METADATA_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningMetadata"
UNKNOWN_STATE = "MODERATING"
FAIL_MESSAGE = "Video generation failed (fake)."
FILTER_REASON = "The video was filtered by the safety system (fake)."
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp")


@dataclass
class FakeVeo(FakeTaskUpstream):
    api_key: str = "veo-key"
    redirect_downloads: bool = True
    google_key_errors: bool = False

    terminal: ClassVar[frozenset[str]] = frozenset({SUCCESS, FAILED, FILTERED})
    extra_scripts: ClassVar[dict[str, tuple[str, ...]]] = {"filtered": (QUEUED, RUNNING, FILTERED)}

    @property
    def base_url(self) -> str:
        return self.root

    def _vendor_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1beta/models/{call}", self._submit)
        app.router.add_get("/v1beta/models/{model}/operations/{op}", self._operation)
        app.router.add_get("/v1beta/files/{call}", self._download)
        app.router.add_get("/download-data/{name}", self._data)

    def _refused(self, request: web.Request) -> web.Response | None:
        key = request.headers.get("x-goog-api-key") or request.query.get("key")
        if key == self.api_key:
            return None
        self._note(self._call(request), note="veo auth: " + ("missing" if not key else "wrong key"))
        if not self.google_key_errors:
            return _error(401, "Request had invalid authentication credentials (fake).")
        if not key:
            return _error(
                403, "Method doesn't allow unregistered callers (callers without established identity)."
            )
        return _error(400, "API key not valid. Please pass a valid API key.")

    async def _submit(self, request: web.Request) -> web.Response:
        model, _, verb = request.match_info["call"].partition(":")
        try:
            call = await self._read_body(request)
        except BodyError as exc:
            return self._refused(request) or _error(400, f"Invalid JSON payload received. {exc}")
        denied = self._refused(request)
        if denied is not None:
            return denied
        if verb != "predictLongRunning":
            return _error(404, f"models/{model} is not found, or :{verb} is not supported (fake).")
        status, reject = self._gate("submit")
        if status != 200:
            return _error(status, "The service failed (fake).")
        if reject:
            return _error(400, "The request was rejected (fake).")
        body = call.json
        problem = _validate(body)
        if problem is not None:
            return _error(400, problem)
        parameters = body.get("parameters") or {}
        samples = parameters.get("sampleCount", 1)
        audio = model.startswith("veo-3") and parameters.get("generateAudio") is not False
        job = self._new_job(
            call, model, dict(body), job_id=uuid.uuid4().hex[:12], extra={"samples": samples, "audio": audio}
        )
        return json_response(200, {"name": _name(job)})

    async def _operation(self, request: web.Request) -> web.Response:
        call = self._poll_call(request, request.match_info["op"])
        await self._hold()
        denied = self._refused(request)
        if denied is not None:
            return denied
        status, _ = self._gate("poll")
        if status != 200:
            return _error(status, "The service failed (fake).")
        model, op = request.match_info["model"], request.match_info["op"]
        job = self._find(op)
        if job is None or job.kind != model:
            return _error(404, f"Operation models/{model}/operations/{op} is not found.")
        stage = self._step(call, job)
        return json_response(200, self._render(job, stage))

    def _render(self, job: Job, stage: str) -> dict[str, Any]:
        operation: dict[str, Any] = {"name": _name(job)}
        if stage == UNKNOWN:
            operation["metadata"] = {"@type": METADATA_TYPE, "state": UNKNOWN_STATE}
        if stage not in self.terminal:
            return operation
        operation["done"] = True
        if stage == FAILED:
            operation["error"] = {"code": 13, "message": self._failure(FAIL_MESSAGE), "status": "INTERNAL"}
            return operation
        result: dict[str, Any]
        if stage == FILTERED:
            result = {"raiMediaFilteredCount": 1, "raiMediaFilteredReasons": [self._failure(FILTER_REASON)]}
        else:
            result = {
                "generatedSamples": [
                    {"video": {"uri": self._file_uri(job, n)}} for n in range(job.extra["samples"])
                ]
            }
        operation["response"] = {"@type": RESPONSE_TYPE, "generateVideoResponse": result}
        return operation

    def _file_uri(self, job: Job, index: int) -> str:
        file_id = f"{job.id}v{index}"
        self._publish(f"{file_id}.mp4", "video/mp4", task_fixtures.mp4(audio=job.extra["audio"]), job.id)
        return f"{self.root}/v1beta/files/{file_id}:download?alt=media"

    async def _download(self, request: web.Request) -> web.Response:
        file_id, _, verb = request.match_info["call"].partition(":")
        found = self._published(f"{file_id}.mp4")
        self._note(self._call(request), kind="download", job_id=found[2] if found else None)
        denied = self._refused(request)
        if denied is not None:
            return denied
        if verb != "download" or request.query.get("alt") != "media":
            return _error(400, "Only files/{id}:download?alt=media is served by this fake.")
        if found is None:
            return _error(404, f"File {file_id} is not found.")
        if self.redirect_downloads:
            raise web.HTTPFound(f"{self.root}/download-data/{file_id}.mp4")
        return self._serve(request, f"{file_id}.mp4")

    async def _data(self, request: web.Request) -> web.Response:
        return self._serve(request, request.match_info["name"])


def _validate(body: Any) -> str | None:
    """Why the Gemini API would refuse this body, or None."""
    if not isinstance(body, dict):
        return "The body must be a JSON object."
    instances = body.get("instances")
    if not isinstance(instances, list) or len(instances) != 1 or not isinstance(instances[0], dict):
        return "instances must hold exactly one instance."
    instance = instances[0]
    prompt, image = instance.get("prompt"), instance.get("image")
    if prompt is not None and not isinstance(prompt, str):
        return "instances[0].prompt must be a string."
    if not (prompt or "").strip() and image is None:
        return "A prompt or an image is required."
    if image is not None:
        if not isinstance(image, dict) or image.get("mimeType") not in _IMAGE_TYPES:
            return f"instances[0].image needs bytesBase64Encoded and a mimeType of {', '.join(_IMAGE_TYPES)}."
        try:
            if not base64.b64decode(str(image.get("bytesBase64Encoded", "")), validate=True):
                return "instances[0].image.bytesBase64Encoded is empty."
        except (binascii.Error, ValueError):
            return "instances[0].image.bytesBase64Encoded is not valid base64."
    parameters = body.get("parameters", {})
    if not isinstance(parameters, dict):
        return "parameters must be an object."
    if parameters.get("aspectRatio") not in (None, "16:9", "9:16"):
        return "aspectRatio must be 16:9 or 9:16."
    if parameters.get("resolution") not in (None, "720p", "1080p"):
        return "resolution must be 720p or 1080p."
    samples = parameters.get("sampleCount", 1)
    if not isinstance(samples, int) or isinstance(samples, bool) or not 1 <= samples <= 4:
        return "sampleCount must be from 1 to 4."
    duration = parameters.get("durationSeconds")
    if duration is not None and (
        not isinstance(duration, int | float) or isinstance(duration, bool) or duration <= 0
    ):
        return "durationSeconds must be a positive number."
    return None


def _name(job: Job) -> str:
    return f"models/{job.kind}/operations/{job.id}"


def _error(status: int, message: str) -> web.Response:
    name = _STATUS_NAMES.get(status, "UNKNOWN")
    return json_response(status, {"error": {"code": status, "message": message, "status": name}})
