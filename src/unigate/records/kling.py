"""Kling's task object (the `data` of its query answer): `task_status` submitted |
processing | succeed | failed, times in milliseconds, the videos under `task_result`."""

from __future__ import annotations

from typing import Any

from unigate.records.outputs import output_link, outputs
from unigate.tasks.model import FAILURE, IN_PROGRESS, SUCCESS, Task
from unigate.video.job import video_seconds

_STATUS = {SUCCESS: "succeed", FAILURE: "failed", IN_PROGRESS: "processing"}


def kling_status(task: Task) -> str:
    return _STATUS.get(task.status, "submitted")


def kling_task(task: Task) -> dict[str, Any]:
    record: dict[str, Any] = {
        "task_id": task.id,
        "task_status": kling_status(task),
        "task_status_msg": task.fail_reason,
        "task_info": {"external_task_id": task.external_id} if task.external_id else {},
        "created_at": int(task.created_at * 1000),
        "updated_at": int(task.updated_at * 1000),
    }
    if task.status == SUCCESS:
        videos = []
        for index, item in enumerate(outputs(task)):
            seconds = item.get("duration") or video_seconds(task.request)
            videos.append(
                {
                    "id": str(item.get("id") or f"{task.id}-{index}"),
                    "url": output_link(task, index),
                    "duration": f"{float(seconds):g}",
                }
            )
        record["task_result"] = {"videos": videos}
    return record
