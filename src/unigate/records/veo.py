"""Veo jobs as the Gemini API's long-running operations: `name`, `done` once finished, then
`response.generateVideoResponse.generatedSamples[].video.uri` or `error`.

The sample `uri` points at the gateway's own host (`/v1beta/files/{name}:download`), so a
client downloads with its gateway key and the upstream's key never leaves the gateway. The
file name is lower-case alphanumeric, as google-genai expects of file names."""

from __future__ import annotations

from typing import Any

from unigate.records.outputs import outputs
from unigate.tasks.model import FAILURE, TERMINAL, Task

RESPONSE_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse"
METADATA_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningMetadata"


def operation_name(task: Task) -> str:
    return f"models/{task.model}/operations/{task.id}"


def file_name(task_id: str, index: int) -> str:
    return f"{task_id.replace('-', '')}v{index}"


def parse_file_name(name: str) -> tuple[str, int] | None:
    """(task id, output index) of a file name made by `file_name`."""
    hex_id, sep, index = name.partition("v")
    if not sep or len(hex_id) != 32 or not (index.isascii() and index.isdigit()):  # int() refuses "²"
        return None
    try:
        int(hex_id, 16)
    except ValueError:
        return None
    task_id = f"{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}"
    return task_id, int(index)


def veo_operation(task: Task) -> dict[str, Any]:
    op: dict[str, Any] = {
        "name": operation_name(task),
        "metadata": {"@type": METADATA_TYPE, "progressPercent": task.progress},
    }
    if task.status not in TERMINAL:
        return op
    op["done"] = True
    if task.status == FAILURE:
        op["error"] = {
            "code": 400,
            "message": task.fail_reason or "The task failed.",
            "status": "FAILED_PRECONDITION",
        }
        return op
    base = task.public_base.rstrip("/")
    samples = [
        {
            "video": {
                "uri": f"{base}/v1beta/files/{file_name(task.id, i)}:download?alt=media",
                "mimeType": "video/mp4",
            }
        }
        for i, _ in enumerate(outputs(task))
    ]
    op["response"] = {"@type": RESPONSE_TYPE, "generateVideoResponse": {"generatedSamples": samples}}
    return op
