"""PicWish's task object: the `data` of its query answer (and of a `sync=1` create), wrapped
in `{"status": 200, "message": "success", "data"}` for answers and callbacks.

`state` is PicWish's number: 0 queued, 4 processing, 1 done (progress 100), -1 failed with
the reason in `state_detail`. A visual tool's result is `image` (plus `mask` when the tool
made one), a document tool's is `file`. Times are unix seconds, null until they happen."""

from __future__ import annotations

from typing import Any

from unigate.records.outputs import absolute, output_link, outputs
from unigate.tasks.model import FAILURE, IN_PROGRESS, STATUS_ORDER, SUCCESS, Task

_STATE = {IN_PROGRESS: 4, SUCCESS: 1, FAILURE: -1}
_DETAIL = {IN_PROGRESS: "Processing", SUCCESS: "Complete"}


def picwish_state(task: Task) -> int:
    return _STATE.get(task.status, 0)


def _results(task: Task) -> dict[str, str]:
    """`image` / `file`, and `mask`, of a finished task."""
    items = outputs(task)
    if task.status != SUCCESS or not items:
        return {}
    found: dict[str, str] = {}
    url = output_link(task, 0)
    if url:
        found["file" if task.action.startswith("document/") else "image"] = url
    mask = items[0].get("mask_url")
    if isinstance(mask, str) and mask:
        found["mask"] = absolute(task, mask)
    return found


def _detail(task: Task) -> str:
    """A failed task's reason, else its state in words."""
    if task.status == FAILURE:
        return task.fail_reason or "Failed"
    return _DETAIL.get(task.status, "Queued")


def picwish_task(task: Task) -> dict[str, Any]:
    started = STATUS_ORDER.get(task.status, 0) >= STATUS_ORDER[IN_PROGRESS]
    return {
        "task_id": task.id,
        "state": picwish_state(task),
        "state_detail": _detail(task),
        "progress": 100 if task.status == SUCCESS else max(0, min(99, task.progress)),
        "return_type": 1,
        **_results(task),
        "created_at": task.submit_time,
        "processed_at": task.start_time if started else None,
        "completed_at": task.finish_time or None,
    }


def picwish_envelope(data: dict[str, Any]) -> dict[str, Any]:
    """An answer or callback body around a task object."""
    return {"status": 200, "message": "success", "data": data}
