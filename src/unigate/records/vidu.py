"""Vidu's task shapes: the creation answer of `POST /ent/v2/text2audio` and `/ent/v2/lip-sync`,
and the task query `GET /ent/v2/tasks/{id}/creations`, which is also the body of the task's
callbacks. States: created | queueing | processing | success | failed; `err_code` carries the
failure reason of a failed task and is "" otherwise."""

from __future__ import annotations

from typing import Any

from unigate.music.record import iso_utc
from unigate.records.outputs import absolute, output_link, outputs
from unigate.tasks.model import FAILURE, IN_PROGRESS, QUEUED, SUBMITTED, SUCCESS, Task

_STATE = {
    SUBMITTED: "created",
    QUEUED: "queueing",
    IN_PROGRESS: "processing",
    SUCCESS: "success",
    FAILURE: "failed",
}
# What a lip-sync creation answer echoes back, in this order, when the request set it.
LIP_SYNC_ECHO = ("video_url", "audio_url", "text", "voice_id", "speed", "volume", "ref_photo_url")


def vidu_state(task: Task) -> str:
    return _STATE.get(task.status, "created")


def number(value: float) -> int | float:
    """Whole numbers as integers (Vidu's clients read `credits` and `duration` as numbers
    that are usually whole)."""
    return int(value) if float(value).is_integer() else value


def vidu_creation(task: Task) -> dict[str, Any]:
    """The answer to a create call."""
    req = task.request
    record: dict[str, Any] = {"task_id": task.id, "state": vidu_state(task), "model": task.model}
    if task.action == "text2audio":
        record.update(
            {
                "prompt": req.get("prompt", ""),
                "duration": number(req.get("duration", 10)),
                "seed": req.get("seed", 0),
            }
        )
    else:
        for name in LIP_SYNC_ECHO:
            value = req.get(name)
            if value is not None and value != "":
                record[name] = number(value) if isinstance(value, float) else value
    if req.get("payload"):
        record["payload"] = req["payload"]
    record["credits"] = number(task.price)
    record["created_at"] = iso_utc(task.created_at or task.submit_time)
    return record


def _creations(task: Task) -> list[dict[str, Any]]:
    if task.status != SUCCESS:
        return []
    found = []
    for index, item in enumerate(outputs(task)):
        if item.get("private"):
            cover = output_link(task, index, "thumbnail") if item.get("thumbnail_url") else ""
        else:
            raw = item.get("cover_url") or item.get("thumbnail_url") or ""
            cover = absolute(task, raw) if isinstance(raw, str) else ""
        found.append(
            {
                "id": str(item.get("id") or f"{task.id}-{index}"),
                "url": output_link(task, index),
                "cover_url": cover,
            }
        )
    return found


def vidu_task(task: Task) -> dict[str, Any]:
    """The task query's answer (and the callback body)."""
    return {
        "id": task.id,
        "state": vidu_state(task),
        "err_code": (task.fail_reason or "TaskFailed") if task.status == FAILURE else "",
        "credits": number(task.price),
        "payload": str(task.request.get("payload") or ""),
        "bgm": False,
        "off_peak": False,
        "creations": _creations(task),
    }
