"""Video task records for the OpenAI-style `/v1/videos` family (the SDK's `Video` type) and
the unified `/v1/video/generations` family (the same object plus `task_id`, `url`, `format`
and `metadata`, the shape new-api documents)."""

from __future__ import annotations

from typing import Any

from unigate.records.outputs import canonical_status, error_object, output_link, outputs
from unigate.tasks.model import SUCCESS, Task
from unigate.video.job import video_seconds, video_size

# Download links of finished videos stay valid for a day (the SDK reads `expires_at`).
EXPIRY_SECONDS = 24 * 3600


def _seconds_text(value: float) -> str:
    return f"{value:g}"


def openai_video(task: Task) -> dict[str, Any]:
    req = task.request
    width, height = video_size(req)
    done = task.status == SUCCESS
    completed = task.finish_time or None
    return {
        "id": task.id,
        "object": "video",
        "model": task.model,
        "status": canonical_status(task),
        "progress": task.progress,
        "created_at": int(task.created_at),
        "completed_at": completed,
        "expires_at": (completed + EXPIRY_SECONDS) if done and completed else None,
        "seconds": _seconds_text(video_seconds(req)),
        "size": req.get("size") or f"{width}x{height}",
        "prompt": req.get("prompt") or "",
        "remixed_from_video_id": req.get("remixed_from") or None,
        "error": error_object(task),
    }


def unified_video(task: Task) -> dict[str, Any]:
    req = task.request
    width, height = video_size(req)
    first = outputs(task)[0] if outputs(task) else {}
    duration = first.get("duration") or video_seconds(req)
    record = openai_video(task)
    record.update(
        task_id=task.id,
        url=output_link(task, 0) if task.status == SUCCESS else None,
        format="mp4",
        metadata={
            "duration": duration,
            "fps": first.get("fps") or req.get("fps"),
            "width": first.get("width") or width,
            "height": first.get("height") or height,
            "seed": req.get("seed"),
        },
    )
    return record


def plain(record: dict[str, Any]) -> dict[str, Any]:
    """Webhook body of the video families: the record itself."""
    return record
