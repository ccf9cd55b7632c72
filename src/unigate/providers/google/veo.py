"""Veo video jobs through the Gemini API, for the `gemini` protocol.

Wire (base https://generativelanguage.googleapis.com; the key goes in `x-goog-api-key`, never
in a URL):
- create: `POST /v1beta/models/{model}:predictLongRunning` with
  `{"instances": [{"prompt", "image": {"bytesBase64Encoded", "mimeType"}}],
    "parameters": {"aspectRatio": "16:9"|"9:16", "durationSeconds", "negativePrompt",
                   "resolution": "720p"|"1080p", "sampleCount": 1, ...the job's metadata}}`;
  a job the client wrote in this format is sent as the client wrote it (the model is in the
  path). Answer: a long-running operation `{"name": "models/{model}/operations/{id}"}`.
- poll: `GET /v1beta/{name}` -> `{"name", "done"?, "metadata"?, "error"? {code, message,
  status}, "response"? {"generateVideoResponse": {"generatedSamples": [{"video": {"uri"}}],
  "raiMediaFilteredCount", "raiMediaFilteredReasons"}}}`.
- download: `GET <uri>` with the key; Google answers with a redirect to a storage host, which
  is followed without the key (download.py).
Remix is not a Veo operation. Errors: `{"error": {"code", "message", "status"}}`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import orjson

from unigate.edge.media_types import sniff_image
from unigate.errors import InvalidRequest, NotFound, UpstreamRejected
from unigate.providers.base import (
    InputFile,
    Reply,
    RouteFailed,
    SubmitResult,
    Target,
    TaskRef,
    TaskSubmission,
    Timeouts,
    UpstreamTask,
)
from unigate.providers.download import DownloadPools, fetch
from unigate.providers.http import UpstreamHTTP, read_all
from unigate.providers.task_http import (
    Answer,
    answer_error,
    data_url,
    exchange,
    file_base64,
    is_url,
    number,
    obj,
    objects,
    percent,
    poll_each,
    query_timeouts,
    scrub,
    text,
)

VENDOR = "Gemini"
CREATE_ACTIONS = ("text2video", "image2video")
_ASPECTS = ("16:9", "9:16")
# An operation name as a path: segments of safe characters, none starting with a dot.
_OPERATION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)+$")
_CAMEL = re.compile(r"_([a-z0-9])")
_GENERIC_TYPES = ("", "application/octet-stream", "binary/octet-stream")


class VeoVideos:
    """The Veo calls of one Gemini-protocol provider: its pool (which carries the key) for the
    API, and pools of its own for the hosts video downloads redirect to."""

    def __init__(self, http: UpstreamHTTP, base_url: str, secrets: Sequence[str]) -> None:
        self.http = http
        self.base_url = base_url
        self.secrets = list(secrets)
        self.pools = DownloadPools()

    async def aclose(self) -> None:
        await self.pools.aclose()

    async def submit(self, job: TaskSubmission, target: Target) -> SubmitResult:
        if job.action not in CREATE_ACTIONS:
            raise InvalidRequest(
                "The model's provider (Veo) cannot remix videos.", code="unsupported_operation"
            )
        model = quote(target.upstream_model.removeprefix("models/"), safe="")
        body = orjson.dumps(request_body(job))
        answer = await exchange(
            self.http, "POST", f"/v1beta/models/{model}:predictLongRunning", target.timeouts, body
        )
        self._check(answer)
        name = text(answer.body, "name")
        if not _OPERATION.match(name):
            raise RouteFailed("The Gemini upstream's answer has no operation name.")
        return SubmitResult(name)

    async def poll(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        limits = query_timeouts(timeouts)

        async def query(ref: TaskRef) -> UpstreamTask | None:
            if not _OPERATION.match(ref.upstream_id):
                return None
            answer = await exchange(self.http, "GET", f"/v1beta/{ref.upstream_id}", limits)
            self._check(answer)
            return operation_state(ref.upstream_id, answer.body, self.secrets)

        return await poll_each(refs, query, VENDOR)

    async def content(self, ref: TaskRef, output: dict[str, Any], variant: str, timeouts: Timeouts) -> Reply:
        if variant != "video":
            raise NotFound(f"The task has no {variant} file.", code="file_not_found")
        download = await fetch(text(output, "url"), self.http, self.base_url, self.pools, timeouts)
        resp = download.response
        if resp.status >= 300:
            try:
                raw = await read_all(resp, "error response")
            finally:
                await download.discard()
            body = _json_object(raw)
            retry_after = resp.headers.get("Retry-After")
            answer = Answer(resp.status, body, bool(body), retry_after, resp.path, not raw.strip())
            self._check(answer, not_found="The video file is no longer available upstream.")
        content_type = resp.headers.get("Content-Type", "")
        if content_type.lower() in _GENERIC_TYPES:
            content_type = text(output, "content_type") or "video/mp4"
        return Reply(
            status=200,
            content_type=content_type.encode("latin-1"),
            stream=download.stream(),
            close=download.close,
        )

    def _check(self, answer: Answer, not_found: str = "") -> None:
        """Raise the mapped error of a failed answer (Google's status word as the code); a
        redirect is one too (downloads follow them before this)."""
        if answer.status < 300:
            if not answer.is_json:
                raise RouteFailed("The Gemini upstream's answer is not a JSON object.")
            return
        err = obj(answer.body, "error")
        message = not_found if answer.status == 404 and not_found else text(err, "message")
        code = text(err, "status")
        code_ = code if code.isidentifier() else None
        raise answer_error(VENDOR, answer, message, self.secrets, code_, clients_404=bool(not_found))


def operation_state(upstream_id: str, op: dict[str, Any], secrets: Sequence[str] = ()) -> UpstreamTask:
    """A long-running operation as the task vocabulary. An operation exists only once Google
    took the job and shows no queue, so one not yet done is IN_PROGRESS (with the progress its
    metadata gives, when it gives one)."""
    if op.get("done") is not True:
        metadata = obj(op, "metadata")
        progress = percent(metadata.get("progressPercent", metadata.get("progress")))
        return UpstreamTask(upstream_id, "IN_PROGRESS", progress=progress)
    task = UpstreamTask(upstream_id, "FAILURE", progress=100)
    error = obj(op, "error")
    if error:
        task.fail_reason = scrub(text(error, "message"), secrets) or "The video generation failed."
        task.error_type = text(error, "status") or text(error, "code") or "generation_failed"
        return task
    response = obj(obj(op, "response"), "generateVideoResponse")
    for sample in objects(response, "generatedSamples"):
        video = obj(sample, "video")
        uri = text(video, "uri")
        if uri:
            # The file link needs the provider's key: the gateway fetches it (task_content).
            mime = text(video, "mimeType") or text(video, "encoding") or "video/mp4"
            task.outputs.append({"url": uri, "private": True, "content_type": mime})
    if task.outputs:
        task.status = "SUCCESS"
        return task
    reasons = [r for r in response.get("raiMediaFilteredReasons") or [] if isinstance(r, str) and r]
    filtered = number(response.get("raiMediaFilteredCount")) or 0
    if reasons or filtered > 0:
        task.fail_reason = scrub(" ".join(reasons), secrets) or "The video was blocked by the safety filters."
        task.error_type = "content_filtered"
    else:
        task.fail_reason = "The upstream finished without a video."
        task.error_type = "generation_failed"
    return task


# -- the create request --


def request_body(job: TaskSubmission) -> dict[str, Any]:
    """The `predictLongRunning` body of a text2video / image2video job."""
    fields = job.fields
    native = fields.get("native")
    if fields.get("native_format") == "veo" and isinstance(native, dict):
        return native
    instance: dict[str, Any] = {}
    if isinstance(fields.get("prompt"), str) and fields["prompt"]:
        instance["prompt"] = fields["prompt"]
    image = _image(job.files.get("image"), fields.get("image"))
    if image is not None:
        instance["image"] = image
    return {"instances": [instance], "parameters": _parameters(fields)}


def _parameters(fields: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    aspect = _aspect_ratio(fields)
    if aspect:
        params["aspectRatio"] = aspect
    seconds = fields.get("seconds")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        params["durationSeconds"] = round(seconds)
    if isinstance(fields.get("negative_prompt"), str) and fields["negative_prompt"]:
        params["negativePrompt"] = fields["negative_prompt"]
    width, height = fields.get("width"), fields.get("height")
    if isinstance(width, int) and isinstance(height, int):
        params["resolution"] = "1080p" if min(width, height) >= 1080 else "720p"
    params["sampleCount"] = 1
    metadata = fields.get("metadata")
    if isinstance(metadata, dict):
        # Vendor extras pass through over the derived fields; Veo's names are camelCase.
        params.update({_camel(str(k)): v for k, v in metadata.items()})
    return params


def _aspect_ratio(fields: dict[str, Any]) -> str | None:
    given = fields.get("aspect_ratio")
    if isinstance(given, str) and given in _ASPECTS:
        return given
    width, height = fields.get("width"), fields.get("height")
    if isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
        return "16:9" if width >= height else "9:16"
    return None  # Veo's default (16:9)


def _image(upload: InputFile | None, ref: Any) -> dict[str, str] | None:
    """The start image inline, as Veo takes it (it fetches no URLs)."""
    if upload is not None:
        mime = upload.content_type
        if not mime.startswith("image/"):
            mime = f"image/{sniff_image(upload.data[:64]) or 'png'}"
        return {"bytesBase64Encoded": file_base64(upload), "mimeType": mime}
    if not isinstance(ref, str) or not ref:
        return None
    if is_url(ref):
        raise UpstreamRejected(
            400,
            "Veo takes the start image as inline bytes (base64 or a data: URL), not as a link.",
            code="invalid_image",
        )
    head, _, payload = data_url(ref).partition(",")
    if not head.endswith(";base64") or not payload:
        raise UpstreamRejected(400, "The start image must be base64 encoded.", code="invalid_image")
    return {"bytesBase64Encoded": payload, "mimeType": head[len("data:") :].split(";")[0] or "image/png"}


def _camel(key: str) -> str:
    return _CAMEL.sub(lambda m: m.group(1).upper(), key)


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        parsed = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
