"""`picwish` protocol: PicWish's asynchronous image and document tools
(https://techhk.aoscdn.com): segmentation, inpainting, enhancement, OCR and the like.

Auth: `X-API-KEY: <api_key>`.
Submit: `POST /api/tasks/{visual|document}/<tool>` as multipart/form-data: the job's text
fields (`image_url`, tool parameters) and its files (`image_file`, `mask_file`), always with
`sync=0` and `return_type=1` (the gateway runs every job asynchronously and keeps result URLs).
Answer `{"status": 200, "message": "success", "data": {"task_id"}}`.
Query: `GET /api/tasks/{visual|document}/<tool>/{task_id}` → `{"status": 200, "data":
{"task_id", "state", "state_detail", "progress", "image" | "file" | other result URLs ...}}`.
A job succeeded when HTTP 200, body `status` 200 and `state` 1; `state` < 0 failed (-1
failed, -2 result upload failed, -3 source download failed, -5 too large, -7 invalid image,
-8 timed out); 0, 2 and 3 wait; 4 runs. Errors are `{"status": <http-like int>, "message"}`,
also under an HTTP 200: the body status decides.
"""

from __future__ import annotations

import re
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
    content_type_of,
    exchange,
    form_body,
    is_url,
    number,
    obj,
    path_id,
    percent,
    poll_each,
    query_timeouts,
    text,
)
from unigate.tasks.model import UNKNOWN

PROVIDER_TYPE = "picwish"
DEFAULT_BASE_URL = "https://techhk.aoscdn.com"
VENDOR = "PicWish"
# `visual/<tool>` or `document/<tool>` (tools may have a sub-path: `visual/external/...`).
_ACTION = re.compile(r"^(visual|document)(/[A-Za-z0-9][A-Za-z0-9_-]*){1,3}$")
_WAITING = {0, 2, 3}
_RUNNING = 4
_FAILURES = {
    -1: ("processing_failed", "The upstream could not process the file."),
    -2: ("result_upload_failed", "The upstream finished but could not store the result."),
    -3: ("source_download_failed", "The upstream could not download the source file."),
    -5: ("file_too_large", "The source file is too large for the upstream."),
    -7: ("invalid_image", "The source file is not a valid image."),
    -8: ("processing_timeout", "The upstream timed out processing the file."),
}
# Fields of a query's `data` that describe the job rather than its result.
_STATUS_FIELDS = frozenset(
    {
        "task_id",
        "state",
        "state_detail",
        "progress",
        "return_type",
        "created_at",
        "processed_at",
        "completed_at",
        "image",
        "file",
        "mask",
        "type",
        "err_message",
    }
)


class PicWishProvider(Provider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset({"visual", "document"})

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        headers = upstream_headers(
            {}, config.headers, {"X-API-KEY": config.api_key} if config.api_key else {}
        )
        self.http = UpstreamHTTP(config.base_url or DEFAULT_BASE_URL, headers, config)
        self.secrets = [config.api_key] if config.api_key else []

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def submit_task(self, job: TaskSubmission, target: Target) -> SubmitResult:
        if not _ACTION.match(job.action):
            await super().submit_task(job, target)
        body = form_body(form_fields(job.fields), job.files)
        answer = await exchange(self.http, "POST", f"/api/tasks/{job.action}", target.timeouts, body)
        task_id = text(self._data(answer), "task_id")
        if not task_id:
            raise RouteFailed("The PicWish upstream's answer has no task id.")
        return SubmitResult(task_id)

    async def poll_tasks(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        limits = query_timeouts(timeouts)

        async def query(ref: TaskRef) -> UpstreamTask | None:
            if not _ACTION.match(ref.action):
                return None
            path = f"/api/tasks/{ref.action}/{path_id(ref.upstream_id)}"
            answer = await exchange(self.http, "GET", path, limits)
            return task_state(ref.upstream_id, self._data(answer))

        return await poll_each(refs, query, VENDOR)

    def _data(self, answer: Answer) -> dict[str, Any]:
        """`data` of a successful answer; the HTTP status, then the body's, decide failures."""
        message = text(answer.body, "message")
        if answer.status >= 400:
            raise answer_error(VENDOR, answer, message, self.secrets)
        if not answer.is_json:
            raise answer_error(VENDOR, answer, message, self.secrets, detail="unreadable answer")
        found = number(answer.body.get("status"))
        if found != 200:  # no status, or an error's: what the body says decides
            status = int(found) if found is not None else 0
            detail = f"body status {status}"
            raise answer_error(VENDOR, answer, message, self.secrets, status=status, detail=detail)
        return obj(answer.body, "data")


def form_fields(fields: dict[str, Any]) -> dict[str, str]:
    """The job's text fields as form values; the gateway's own delivery settings win."""
    out: dict[str, str] = {}
    for name, value in fields.items():
        if value is None or name in ("callback_url", "sync", "return_type"):
            continue
        if isinstance(value, bool):
            out[name] = "1" if value else "0"
        elif isinstance(value, str | int | float):
            out[name] = str(value)
        else:  # structured parameters (e.g. inpaint `rectangles`) travel as JSON text
            out[name] = orjson.dumps(value).decode()
    out["sync"] = "0"
    out["return_type"] = "1"
    return out


def task_state(upstream_id: str, data: dict[str, Any]) -> UpstreamTask:
    state_value = number(data.get("state"))
    state = int(state_value) if state_value is not None and state_value.is_integer() else None
    progress = percent(data.get("progress"))
    if state == 1:
        return UpstreamTask(upstream_id, "SUCCESS", progress=100, outputs=_outputs(data))
    if state is not None and state < 0:
        error_type, readable = _FAILURES.get(state, ("processing_failed", "The PicWish task failed."))
        detail = text(data, "state_detail") or text(data, "err_message")
        reason = f"{readable} ({detail})" if detail else readable
        return UpstreamTask(upstream_id, "FAILURE", progress, fail_reason=reason, error_type=error_type)
    if state in _WAITING:
        return UpstreamTask(upstream_id, "QUEUED", progress)
    if state == _RUNNING:
        return UpstreamTask(upstream_id, "IN_PROGRESS", progress)
    return UpstreamTask(upstream_id, UNKNOWN, progress)


def _outputs(data: dict[str, Any]) -> list[dict[str, Any]]:
    extra = {k: v for k, v in data.items() if k not in _STATUS_FIELDS and _has_url(v)}
    url = next((data[k] for k in ("image", "file") if is_url(data.get(k))), None)
    if url is None:  # tools whose result is only, say, class masks: their first link
        url = _first_url(extra) or (data["mask"] if is_url(data.get("mask")) else None)
    if url is None:
        return []
    out: dict[str, Any] = {"url": url}
    if is_url(data.get("mask")):
        out["mask_url"] = data["mask"]
    if content_type := content_type_of(url):
        out["content_type"] = content_type
    if extra:
        out["extra"] = extra
    return [out]


def _has_url(value: Any) -> bool:
    """A result link, or an object/array holding some (class masks by part, zips)."""
    return _first_url(value) is not None


def _first_url(value: Any) -> str | None:
    if is_url(value):
        return str(value)
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return next((url for item in items if (url := _first_url(item)) is not None), None)
