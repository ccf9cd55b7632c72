"""OpenAI's video jobs (`/videos`) for the `openai` protocol.

Wire (paths under the provider's base URL, e.g. https://api.openai.com/v1; Bearer key):
- create: `POST /videos`, multipart/form-data: `prompt`, `model`, `seconds` (a string, "4"),
  `size` ("WxH"), and the start image as the file part `input_reference`, or by URL as the
  text field `input_reference[image_url]`. A job the client wrote in OpenAI's own format is
  sent with the client's own fields, model mapped. Answer: a video object with `id`.
- remix: `POST /videos/{id}/remix` with JSON `{"prompt"}`; answer: a new video object.
- retrieve: `GET /videos/{id}` -> `status` queued | in_progress | completed | failed,
  `progress` (0-100), `seconds`, `size`, `error {code, message}`.
- content: `GET /videos/{id}/content?variant=video|thumbnail|spritesheet` -> the bytes
  (video/mp4, image/webp, image/jpeg), which need the provider's key: finished jobs list a
  private output that the gateway fetches for its client.
- delete: `DELETE /videos/{id}`.
Errors: `{"error": {"message", "type", "param", "code"}}`, read in `_error` (statuses: the table's).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import orjson

from unigate.errors import InvalidRequest, UpstreamRejected
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
from unigate.providers.body_stream import relay_bytes
from unigate.providers.form_body import FormBody
from unigate.providers.http import UpstreamHTTP, read_all
from unigate.providers.task_http import (
    Answer,
    answer_error,
    data_url,
    form_body,
    is_url,
    number,
    obj,
    path_id,
    percent,
    poll_each,
    query_timeouts,
    scrub,
    text,
)
from unigate.tasks.model import UNKNOWN

VENDOR = "OpenAI"
CREATE_ACTIONS = ("text2video", "image2video")
_STATUSES = {"queued": "QUEUED", "in_progress": "IN_PROGRESS", "completed": "SUCCESS", "failed": "FAILURE"}
_VARIANT_TYPES = {"video": "video/mp4", "thumbnail": "image/webp", "spritesheet": "image/jpeg"}
_SIZE = re.compile(r"^(\d+)x(\d+)$")
_IDENTIFIER = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class OpenAIVideos:
    """The video-job calls of one OpenAI-protocol provider, over its pool."""

    def __init__(self, http: UpstreamHTTP, secrets: Sequence[str]) -> None:
        self.http = http
        self.secrets = list(secrets)  # blanked out of any upstream message relayed

    async def submit(self, job: TaskSubmission, target: Target) -> SubmitResult:
        if job.action == "remix":
            source = job.fields.get("remix_of")
            if not isinstance(source, str) or not source:
                raise InvalidRequest("A remix needs the source video.", param="video_id")
            body = orjson.dumps({"prompt": str(job.fields.get("prompt") or "")})
            answer = await self._call("POST", f"/videos/{path_id(source)}/remix", target.timeouts, body)
        else:
            form = create_form(job, target.upstream_model)
            answer = await self._call("POST", "/videos", target.timeouts, form)
        video_id = text(answer, "id")
        if not video_id:
            raise RouteFailed("The OpenAI upstream's answer has no video id.")
        return SubmitResult(video_id)

    async def poll(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        limits = query_timeouts(timeouts)

        async def query(ref: TaskRef) -> UpstreamTask | None:
            body = await self._call("GET", f"/videos/{path_id(ref.upstream_id)}", limits)
            return video_state(ref.upstream_id, body, self.secrets)

        return await poll_each(refs, query, VENDOR)

    async def content(self, ref: TaskRef, output: dict[str, Any], variant: str, timeouts: Timeouts) -> Reply:
        video_id = text(output, "id") or ref.upstream_id
        path = f"/videos/{path_id(video_id)}/content?variant={quote(variant, safe='')}"
        resp = await self.http.get(path, timeouts)
        if resp.status >= 400:
            try:
                raw = await read_all(resp, "error response")
            finally:
                resp.release()
            body = _json_object(raw)
            retry_after = resp.headers.get("Retry-After")
            answer = Answer(
                resp.status, body or {}, body is not None, retry_after, resp.path, not raw.strip()
            )
            raise self._error(answer, clients_404=True)
        fallback = _VARIANT_TYPES.get(variant, "application/octet-stream")
        content_type = resp.headers.get("Content-Type") or fallback
        return Reply(
            status=200,
            content_type=content_type.encode("latin-1"),
            stream=relay_bytes(resp),
            close=resp.close,
        )

    async def delete(self, ref: TaskRef, timeouts: Timeouts) -> None:
        try:
            await self._call("DELETE", f"/videos/{path_id(ref.upstream_id)}", timeouts, clients_404=True)
        except UpstreamRejected as exc:
            if exc.status != 404:  # already gone upstream: what the client asked for
                raise

    async def _call(
        self,
        method: str,
        path: str,
        timeouts: Timeouts,
        data: bytes | FormBody = b"",
        clients_404: bool = False,
    ) -> dict[str, Any]:
        """One exchange; the answer's JSON object, or the mapped error."""
        resp = await self.http.request(method, path, data, timeouts)
        try:
            raw = await read_all(resp)
        finally:
            resp.release()
        body = _json_object(raw)
        if resp.status >= 400:
            retry_after = resp.headers.get("Retry-After")
            answer = Answer(
                resp.status, body or {}, body is not None, retry_after, resp.path, not raw.strip()
            )
            raise self._error(answer, clients_404)
        if body is None:
            raise RouteFailed("The OpenAI upstream's answer is not a JSON object.")
        return body

    def _error(self, answer: Answer, clients_404: bool = False) -> RouteFailed | UpstreamRejected:
        """The status table's error, with OpenAI's `error.message` and `error.code`."""
        err = obj(answer.body, "error")
        code = text(err, "code")
        message = text(err, "message")
        code_ = code if _IDENTIFIER.match(code) else None
        return answer_error(VENDOR, answer, message, self.secrets, code_, clients_404=clients_404)


def video_state(upstream_id: str, body: dict[str, Any], secrets: Sequence[str] = ()) -> UpstreamTask:
    """A video object as the task vocabulary (anything unexpected is UNKNOWN)."""
    status = _STATUSES.get(text(body, "status"), UNKNOWN)
    task = UpstreamTask(upstream_id, status, progress=percent(body.get("progress")))
    if status == "SUCCESS":
        task.progress = 100
        task.outputs = [_output(text(body, "id") or upstream_id, body)]
    elif status == "FAILURE":
        err = obj(body, "error")
        task.fail_reason = scrub(text(err, "message"), secrets) or "The video generation failed."
        task.error_type = text(err, "code") or "generation_failed"
    return task


def _output(video_id: str, body: dict[str, Any]) -> dict[str, Any]:
    # The bytes need the gateway's key: "private" makes the gateway fetch them (task_content).
    out: dict[str, Any] = {"url": "", "private": True, "id": video_id, "content_type": "video/mp4"}
    seconds = number(body.get("seconds"))
    if seconds is not None and seconds > 0:
        out["duration"] = seconds
    size = _SIZE.match(text(body, "size"))
    if size:
        out["width"], out["height"] = int(size[1]), int(size[2])
    return out


# -- the create request --


def create_form(job: TaskSubmission, model: str) -> FormBody:
    """The multipart body of `POST /videos` for a text2video / image2video job."""
    return form_body(*create_parts(job, model))


def create_parts(job: TaskSubmission, model: str) -> tuple[dict[str, str], dict[str, InputFile]]:
    """(text fields, files) of the create form; `create_form` encodes them."""
    fields = job.fields
    native = fields.get("native")
    if fields.get("native_format") == "openai" and isinstance(native, dict):
        # The client's own fields; the start image is attached below, from the job.
        out = {
            str(k): value
            for k, v in native.items()
            if k != "model"
            and not str(k).startswith("input_reference")
            and (value := _form_value(v)) is not None
        }
    else:
        out = _canonical_fields(fields)
    out["model"] = model
    files: dict[str, InputFile] = {}
    upload = job.files.get("image")
    image = fields.get("image")
    if upload is not None:
        files["input_reference"] = upload
    elif is_url(image):
        out["input_reference[image_url]"] = str(image)
    elif isinstance(image, str) and image:
        files["input_reference"] = _decoded_image(image)
    return out, files


def _canonical_fields(fields: dict[str, Any]) -> dict[str, str]:
    out = {"prompt": str(fields.get("prompt") or "")}
    seconds = fields.get("seconds")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        out["seconds"] = f"{seconds:g}"  # a string on this wire: "4", "8", "12"
    size = fields.get("size")
    width, height = fields.get("width"), fields.get("height")
    if isinstance(size, str) and size:
        out["size"] = size
    elif isinstance(width, int) and isinstance(height, int):
        out["size"] = f"{width}x{height}"
    return out


def _form_value(value: Any) -> str | None:
    """A JSON scalar as the OpenAI SDK writes it into a form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str | int):
        return str(value)
    return None


def _decoded_image(ref: str) -> InputFile:
    """A data: URL or raw base64 image as a file part."""
    head, _, payload = data_url(ref).partition(",")
    mime = head[len("data:") :].split(";")[0] or "image/png"
    if not head.endswith(";base64"):
        raise UpstreamRejected(400, "The start image must be base64 encoded.", code="invalid_image")
    try:
        data = base64.b64decode(payload)
    except (binascii.Error, ValueError):
        raise UpstreamRejected(400, "The start image is not valid base64.", code="invalid_image") from None
    if not data:
        raise UpstreamRejected(400, "The start image is empty.", code="invalid_image")
    subtype = mime.partition("/")[2] or "png"
    return InputFile(data, f"input_reference.{subtype}", mime)


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        parsed = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None
