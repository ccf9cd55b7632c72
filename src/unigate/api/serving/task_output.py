"""Downloading a task's files, written once for every family that serves them: OpenAI's
`/v1/videos/{id}/content`, Veo's `/v1beta/files/{name}:download`, and the key-less link
`/media/tasks/{task_id}/{index}/{variant}` that other families show for files the upstream
only hands out against the gateway's credentials.

A file the gateway stores itself is sent from its file store; a private upstream file is fetched with
the provider's credentials and relayed as it arrives; a public upstream link is a redirect
(the client's SDK follows it, and the gateway's bandwidth is not spent on it).
"""

from __future__ import annotations

import re

from unigate.api.serving.media import NOSNIFF, send_stored
from unigate.api.serving.relay import BINARY_FRAMING, send_reply
from unigate.edge.asgi import Request, send_body
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound, UpstreamRejected
from unigate.gateway import Gateway
from unigate.providers.base import RouteFailed, TaskRef, scrubbed
from unigate.providers.upstream_status import client_error
from unigate.records.outputs import VARIANT_KEYS, outputs
from unigate.tasks.model import SUCCESS, Task

_LOCAL = re.compile(r"^/media/([A-Za-z0-9_-]+(\.[A-Za-z0-9]+))$")
_INDEX = re.compile(r"[0-9]{1,9}")  # ASCII digits: str.isdigit() also takes "²", which int() refuses
VARIANTS = tuple(VARIANT_KEYS)


def _no_file() -> NotFound:
    return NotFound("No such file.", code="file_not_found")


def check_variant(value: str | None) -> str:
    variant = value or "video"
    if variant not in VARIANTS:
        raise InvalidRequest(
            "Invalid value for 'variant': expected video, thumbnail or spritesheet.",
            param="variant",
            code="invalid_value",
        )
    return variant


async def send_output(request: Request, gw: Gateway, task: Task, index: int, variant: str) -> None:
    """Answer `request` with file `index` (its `variant`) of a finished `task`; 404 if none."""
    if task.status != SUCCESS:
        raise NotFound("The task has not finished successfully, so it has no files yet.", code="not_ready")
    items = outputs(task)
    if index >= len(items):
        raise NotFound("The task has no such file.", code="file_not_found")
    item = items[index]
    if item.get("private"):
        provider = gw.providers.get(task.provider)
        if provider is None:
            raise NotFound("The provider that made this file is no longer configured.", code="file_gone")
        ref = TaskRef(task.upstream_id, task.action)
        try:
            reply = await provider.task_content(ref, item, variant, provider.timeouts())
        except UpstreamRejected as exc:
            scrubbed(exc, provider.redactor)  # not routed, so scrubbed here
            raise
        except RouteFailed as exc:
            scrubbed(exc, provider.redactor)
            raise client_error(exc, f"The file could not be fetched: {exc.message}") from None
        reply.headers.append(NOSNIFF)
        if request.method == "HEAD":  # the upstream's headers, not its body
            headers = [(b"content-type", reply.content_type), *reply.headers]
            if reply.close is not None:
                reply.close()
            await request.send({"type": "http.response.start", "status": reply.status, "headers": headers})
            await request.send({"type": "http.response.body", "body": b""})
            return
        await send_reply(request, reply, BINARY_FRAMING)
        return
    url = item.get(VARIANT_KEYS[variant])
    if not isinstance(url, str) or not url:
        raise NotFound(f"The task has no {variant} file.", code="file_not_found")
    local = _LOCAL.match(url)
    if local is not None:
        await send_stored(request, gw.storage, local.group(1), local.group(2), cache=False)
        return
    await send_body(request.send, 302, b"", b"text/plain", [(b"location", url.encode("latin-1", "replace"))])


def endpoints(gw: Gateway) -> list[Endpoint]:
    async def proxy(request: Request) -> None:
        # Unguessable like every /media/ link: the task id is a random UUID only its owner sees.
        # This path takes no key, so whatever keeps a file from being served (an unknown id, a
        # task not finished, no such file, its provider gone) is one and the same 404: the
        # answer never tells an id that exists from one that does not.
        variant = check_variant(request.params["variant"])  # a 400 whatever the id
        index = request.params["index"]
        task = await gw.tasks.store.get(request.params["task_id"]) if _INDEX.fullmatch(index) else None
        if task is None:
            raise _no_file()
        try:
            await send_output(request, gw, task, int(index), variant)
        except NotFound:
            raise _no_file() from None

    path = "/media/tasks/{task_id}/{index}/{variant}"
    return [Endpoint(method, path, proxy, auth="none", style="plain") for method in ("GET", "HEAD")]
