"""`suno` protocol: Suno-API-compatible relays (the Suno-API project, new-api and similar).

Submit: `POST {base}/suno/submit/{music|lyrics}` with the Suno fields; the relay answers
`{"code": "success", "data": <task id string | task record>}` - both are handled.
Poll: `POST {base}/suno/fetch {"ids": [...]}` answers a list of task records in one call;
clip statuses (submitted, queued, streaming, complete, error) give the task status.
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
from unigate.providers.http import UpstreamHTTP, read_all
from unigate.providers.upstream_status import Said, json_body, upstream_error
from unigate.tasks.model import TERMINAL, UNKNOWN, combine_clip_statuses

PROVIDER_TYPE = "suno"
VENDOR = "music"
_FIELDS = (
    "prompt",
    "title",
    "tags",
    "continue_at",
    "continue_clip_id",
    "task",
    "gpt_description_prompt",
    "make_instrumental",
)
_TASK_STATUSES = {
    "NOT_START": "SUBMITTED",
    "SUBMITTED": "SUBMITTED",
    "QUEUED": "QUEUED",
    "IN_PROGRESS": "IN_PROGRESS",
    "SUCCESS": "SUCCESS",
    "FAILURE": "FAILURE",
}
_CLIP_FIELDS = (
    "id",
    "status",
    "title",
    "audio_url",
    "video_url",
    "image_url",
    "image_large_url",
    "model_name",
    "major_model_version",
    "avatar_image_url",
)


class SunoProvider(Provider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset({"music", "lyrics"})

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        credentials = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        headers = upstream_headers({"Content-Type": "application/json"}, config.headers, credentials)
        self.http = UpstreamHTTP(config.base_url, headers, config)

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def submit_task(self, job: TaskSubmission, target: Target) -> SubmitResult:
        if job.action not in ("MUSIC", "LYRICS"):
            await super().submit_task(job, target)
        body: dict[str, Any] = {k: job.fields[k] for k in _FIELDS if job.fields.get(k) not in (None, "")}
        if job.action == "MUSIC":
            body["mv"] = target.upstream_model
        data = await self._call(f"/suno/submit/{job.action.lower()}", body, target.timeouts)
        if isinstance(data, str) and data:
            return SubmitResult(data)
        if isinstance(data, dict):
            upstream_id = data.get("task_id") or data.get("id")
            clips = data.get("data") if isinstance(data.get("data"), list) else data.get("clips")
            if isinstance(upstream_id, str) and upstream_id:
                ids = [str(c["id"]) for c in clips or [] if isinstance(c, dict) and c.get("id")]
                return SubmitResult(upstream_id, ids)
        raise RouteFailed("The upstream's submit answer has no task id.")

    async def poll_tasks(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        data = await self._call("/suno/fetch", {"ids": [r.upstream_id for r in refs]}, timeouts)
        items = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
        out: dict[str, UpstreamTask] = {}
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("task_id"), str):
                out[item["task_id"]] = _task_state(item)
        return out

    async def _call(self, path: str, body: dict[str, Any], timeouts: Timeouts) -> Any:
        resp = await self.http.post(path, orjson.dumps(body), timeouts)
        try:
            raw = await read_all(resp)
        finally:
            resp.release()
        payload = json_body(raw)
        if resp.status >= 400:
            retry_after = resp.headers.get("Retry-After")
            raise upstream_error(
                resp.status,
                _said(payload),
                vendor=VENDOR,
                retry_after=retry_after,
                path=resp.path,
                not_json=payload is None and bool(raw.strip()),
            )
        if not isinstance(payload, dict):
            raise RouteFailed("The music upstream's answer is not a JSON object.")
        if payload.get("code") not in ("success", 200, "200"):
            # A relay's refusal under HTTP 200, with its own code: the client's request.
            raise upstream_error(400, _said(payload), vendor=VENDOR)
        return payload.get("data")


def _said(payload: Any) -> Said:
    """A relay's error envelope: `{"code", "message", "data": null}`."""
    if not isinstance(payload, dict):
        return Said()
    code = payload.get("code")
    return Said(
        str(payload.get("message") or ""),
        code if isinstance(code, str) and code.isidentifier() else "upstream_rejected",
    )


def _task_state(item: dict[str, Any]) -> UpstreamTask:
    data = item.get("data")
    clips_raw = data if isinstance(data, list) else []
    clips = [_clip(c) for c in clips_raw if isinstance(c, dict)]
    lyrics = None
    if isinstance(data, dict) and ("text" in data or "title" in data):
        lyrics = {
            "text": str(data.get("text") or ""),
            "title": str(data.get("title") or ""),
            "status": str(data.get("status") or ""),
        }
    status = _TASK_STATUSES.get(str(item.get("status") or "").upper(), UNKNOWN)
    if clips:
        from_clips = combine_clip_statuses([str(c.get("status", "")) for c in clips])
        # The clips are the finer-grained truth unless the relay already reports an end.
        if status not in TERMINAL and from_clips != UNKNOWN:
            status = from_clips
    fail_reason = str(item.get("fail_reason") or "")
    if status == "FAILURE" and not fail_reason:
        fail_reason = next((c.get("error_message", "") for c in clips if c.get("error_message")), "")
    return UpstreamTask(
        upstream_id=str(item["task_id"]),
        status=status,
        progress=_percent(item.get("progress")),
        fail_reason=fail_reason,
        error_type=str(item.get("error_type") or ""),
        clips=clips,
        lyrics=lyrics,
        start_time=_unix(item.get("start_time")),
    )


def _clip(raw: dict[str, Any]) -> dict[str, Any]:
    clip = {k: raw[k] for k in _CLIP_FIELDS if k in raw}
    meta_raw = raw.get("metadata")
    meta: dict[str, Any] = meta_raw if isinstance(meta_raw, dict) else {}
    if meta.get("duration") is not None:
        clip["duration"] = meta["duration"]
    if meta.get("error_message"):
        clip["error_message"] = str(meta["error_message"])
        clip["error_type"] = str(meta.get("error_type") or "upstream_error")
    return clip


def _unix(value: Any) -> int | None:
    """A positive unix time in seconds (13-digit milliseconds are converted), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return int(value / 1000) if value >= 1e12 else int(value)


def _percent(value: Any) -> int | None:
    if isinstance(value, int | float):
        return int(value)
    digits = value.rstrip("%").strip() if isinstance(value, str) else ""
    if digits.isascii() and digits.isdigit():
        return int(digits)
    return None
