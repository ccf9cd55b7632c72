"""Render a task as the music family's task record (spec §2.1 to §2.3), every field present.

At submit the record is the spec's seed: status SUBMITTED, progress "0%", finish_time 0, two
clips whose ids are `search_item`, empty result addresses. As the task advances the clips
take the upstream's status and addresses; task-level results are filled on SUCCESS.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from unigate.tasks.model import SUCCESS, Task

AVATAR_NAME = "avatar.png"  # served by the media endpoint

_URL_FIELDS = ("audio_url", "video_url", "image_url", "image_large_url")


def iso_utc(timestamp: float) -> str:
    return (
        dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def model_versions(mv: str) -> tuple[str, str]:
    """(model_name, major_model_version) for an `mv` such as chirp-v3-5 -> v3.5."""
    _, _, version = mv.partition("-v")
    return mv, ("v" + version.replace("-", ".")) if version else ""


def _absolute(url: str, base: str) -> str:
    return base.rstrip("/") + url if url.startswith("/") else url


def _history(req: dict[str, Any]) -> list[dict[str, Any]]:
    clip = req.get("continue_clip_id") or ""
    if not clip:
        return []
    return [
        {
            "continue_at": req.get("continue_at") or 0,
            "id": clip,
            "infill": False,
            "source": "web",
            "type": "gen",
        }
    ]


def render_clip(task: Task, position: int, clip_id: str, upstream: dict[str, Any] | None) -> dict[str, Any]:
    req = task.request
    up = upstream or {}
    model_name, major = model_versions(task.model)
    is_upload = task.action == "UPLOAD"
    metadata: dict[str, Any] = {
        "can_remix": True,
        "edited_clip_id": req.get("continue_clip_id") or "",
        "history": _history(req),
        "infill": False,
        "is_remix": False,
        "priority": 10,
        "prompt": req.get("prompt") or "",
        "stream": True,
        "tags": req.get("tags") or "",
        "task": req.get("task") or "",
        "type": "upload" if is_upload else ("concat" if req.get("continue_clip_id") else "gen"),
    }
    if req.get("gpt_description_prompt"):
        metadata["gpt_description_prompt"] = req["gpt_description_prompt"]
    if req.get("make_instrumental") is not None:
        metadata["make_instrumental"] = bool(req.get("make_instrumental"))
    if up.get("duration") is not None:
        metadata["duration"] = up["duration"]
    if up.get("error_message"):
        metadata["error_type"] = up.get("error_type") or "upstream_error"
        metadata["error_message"] = up["error_message"]
    clip: dict[str, Any] = {
        "id": clip_id,
        "title": up.get("title") or req.get("title") or "",
        **{name: _absolute(str(up.get(name) or ""), task.public_base) for name in _URL_FIELDS},
        "major_model_version": up.get("major_model_version") or major,
        "model_name": up.get("model_name") or model_name,
        "status": up.get("status") or "submitted",
        "created_at": iso_utc(task.created_at),
        "handle": "",
        "display_name": "",
        "avatar_image_url": up.get("avatar_image_url")
        or f"{task.public_base.rstrip('/')}/media/{AVATAR_NAME}",
        "user_id": task.key_id,
        "entity_type": "song_schema",
        "is_public": False,
        "is_trashed": False,
        "is_liked": False,
        "is_handle_updated": False,
        "is_contest_clip": False,
        "allow_comments": True,
        "has_hook": False,
        "play_count": 0,
        "upvote_count": 0,
        "flag_count": 0,
        "metadata": metadata,
    }
    return clip


def music_record(task: Task) -> dict[str, Any]:
    req = task.request
    res = task.result
    done = task.status == SUCCESS
    if task.action == "LYRICS":
        lyrics = res.get("lyrics") or {}
        data: Any = {
            "text": lyrics.get("text", ""),
            "title": lyrics.get("title", ""),
            "status": lyrics.get("status", "submitted"),
        }
        first: dict[str, Any] = {}
    else:
        upstream_clips = res.get("clips") or []
        data = [
            render_clip(task, i, clip_id, upstream_clips[i] if i < len(upstream_clips) else None)
            for i, clip_id in enumerate(task.clip_ids)
        ]
        first = data[0] if data else {}
    duration = res.get("duration") or 0
    return {
        "task_id": task.id,
        "notify_hook": task.notify_hook,
        "action": task.action,
        "status": task.status,
        "fail_reason": task.fail_reason,
        "submit_time": task.submit_time,
        "start_time": task.start_time,
        "finish_time": task.finish_time,
        "progress": f"{task.progress}%",
        "search_item": ",".join(task.clip_ids),
        "data": data,
        **{name: (first.get(name, "") if done else "") for name in _URL_FIELDS},
        "major_model_version": first.get("major_model_version", "") if done else "",
        "model_name": first.get("model_name", "") if done else "",
        "prompt": (req.get("prompt") or "") if done else "",
        "type": ("gen" if task.action == "MUSIC" else task.action.lower()) if done else "",
        "tags": (req.get("tags") or "") if done else "",
        "duration": round(float(duration)) if done else 0,
        "error_type": res.get("error_type", ""),
        "error_message": res.get("error_message", ""),
        "handle": "",
        "is_handle_updated": False,
        "is_trashed": False,
        "reaction": None,
        "created_at": iso_utc(task.created_at) if done else "",
        "title": (req.get("title") or (data.get("title", "") if isinstance(data, dict) else ""))
        if done
        else "",
    }


def envelope(data: Any) -> dict[str, Any]:
    return {"code": "success", "message": "", "data": data}
