"""Where a client downloads a task's files, whichever family shows them.

An upstream output url is one of three kinds (see `UpstreamTask.outputs`): relative
(`/media/...`: a file the gateway stores itself, made absolute with the base URL the client
used), private (the upstream wants the gateway's credentials: the gateway fetches it for the
client through a link of its own), or public (a vendor CDN link, relayed as it is).
"""

from __future__ import annotations

from typing import Any

from unigate.tasks.model import FAILURE, IN_PROGRESS, SUCCESS, Task

# The canonical (OpenAI video) status vocabulary.
_CANONICAL = {SUCCESS: "completed", FAILURE: "failed", IN_PROGRESS: "in_progress"}
VARIANT_KEYS = {"video": "url", "thumbnail": "thumbnail_url", "spritesheet": "spritesheet_url"}


def canonical_status(task: Task) -> str:
    """queued | in_progress | completed | failed."""
    return _CANONICAL.get(task.status, "queued")


def outputs(task: Task) -> list[dict[str, Any]]:
    found = task.result.get("outputs")
    return found if isinstance(found, list) else []


def absolute(task: Task, url: str) -> str:
    return task.public_base.rstrip("/") + url if url.startswith("/") else url


def proxy_link(task: Task, index: int, variant: str = "video") -> str:
    """The gateway's own unguessable, key-less link to a private output (like `/media/`)."""
    return f"{task.public_base.rstrip('/')}/media/tasks/{task.id}/{index}/{variant}"


def output_link(task: Task, index: int, variant: str = "video") -> str:
    """The link a client follows for output `index` (its `variant`), or "" if there is none."""
    items = outputs(task)
    if index >= len(items):
        return ""
    item = items[index]
    if item.get("private"):
        return proxy_link(task, index, variant)
    url = item.get(VARIANT_KEYS.get(variant, "url"))
    return absolute(task, url) if isinstance(url, str) and url else ""


def error_object(task: Task) -> dict[str, str] | None:
    """`{"code", "message"}` of a failed task, else None."""
    if task.status != FAILURE:
        return None
    code = task.result.get("error_type") or "generation_failed"
    return {"code": str(code), "message": task.fail_reason or "The task failed."}
