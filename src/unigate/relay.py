"""Send an adapter's `Reply` to the client: a body in one write, or a stream relayed event
run by event run, ended with an in-band error (never a silent truncation) if the upstream
dies, and cancelled upstream when the client goes away."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from unigate.asgi import Receive, Request, Send
from unigate.providers.base import Reply, StreamBroken

log = logging.getLogger("unigate.relay")

ErrorEvent = Callable[[str], bytes]


def openai_error_event(message: str) -> bytes:
    """OpenAI SDKs raise on a data object with an `error` key; no `[DONE]` follows."""
    body = orjson.dumps({"error": {"message": message, "type": "upstream_error", "code": "stream_broken"}})
    return b"data: " + body + b"\n\n"


@dataclass(slots=True)
class Outcome:
    status: int
    complete: bool  # False when the upstream broke or the client left mid-stream


async def send_reply(request: Request, reply: Reply, error_event: ErrorEvent = openai_error_event) -> Outcome:
    rid = (b"x-request-id", request.request_id.encode())
    send = request.send
    if reply.stream is None:
        headers = [
            (b"content-type", reply.content_type),
            (b"content-length", str(len(reply.body)).encode()),
            rid,
            *reply.headers,
        ]
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body})
        return Outcome(reply.status, True)

    headers = [(b"content-type", reply.content_type), (b"cache-control", b"no-cache"), rid, *reply.headers]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    pump = asyncio.ensure_future(_pump(reply, send, error_event))
    watcher = asyncio.ensure_future(_client_gone(request.receive))
    try:
        await asyncio.wait((pump, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if not pump.done():
        # The client left: stop reading upstream so the upstream request is cancelled too.
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
        if reply.close is not None:
            reply.close()
        return Outcome(499, False)
    complete = pump.result()
    return Outcome(reply.status if complete else 502, complete)


async def _pump(reply: Reply, send: Send, error_event: ErrorEvent) -> bool:
    assert reply.stream is not None
    complete = True
    try:
        async for run in reply.stream:
            await send({"type": "http.response.body", "body": run, "more_body": True})
    except StreamBroken as exc:
        log.warning("upstream stream broke: %s", exc)
        await send({"type": "http.response.body", "body": error_event(str(exc)), "more_body": True})
        complete = False
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    return complete


async def _client_gone(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
