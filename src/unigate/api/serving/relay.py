"""Send an adapter's `Reply` to the client: a body in one write, or a stream relayed event
run by event run, ended with an in-band error (never a silent truncation) if the upstream
dies, kept alive through long upstream silences, and cancelled upstream when the client
goes away."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from unigate.edge.asgi import Receive, Request, Send
from unigate.providers.base import Reply, StreamBroken
from unigate.translate.openai_chunks import openai_error_chunk
from unigate.translate.sse import comment

log: Final = logging.getLogger("unigate.relay")


@dataclass(frozen=True, slots=True)
class Framing:
    """How a client format's stream says "the upstream broke" and "still here"."""

    # None for binary bodies (audio, images), which have no in-band error: the body is left
    # unterminated, the server drops the connection and the client sees an error, never a
    # short file.
    error_event: Callable[[str], bytes] | None
    keepalive: bytes  # sent between complete events only, so any parser sees a whole line


def openai_error_event(message: str) -> bytes:
    """OpenAI SDKs raise on a data object with an `error` key; no `[DONE]` follows."""
    return openai_error_chunk(message, "upstream_error", "stream_broken")


# An SSE comment: every SSE parser drops it, the OpenAI SDK included.
OPENAI_FRAMING: Final = Framing(openai_error_event, comment(b"keep-alive"))
BINARY_FRAMING: Final = Framing(None, b"")


@dataclass(frozen=True, slots=True)
class Outcome:
    status: int
    complete: bool  # False when the upstream broke or the client left mid-stream


_SENT: Final = Outcome(200, True)  # the common outcome, made once (immutable: shared by every call)


async def send_reply(
    request: Request, reply: Reply, framing: Framing = OPENAI_FRAMING, keepalive: float = 0.0
) -> Outcome:
    """`keepalive` > 0: after that many seconds without an upstream event, send the
    format's keep-alive so proxies and clients don't give up on a thinking model."""
    if reply.stream is None:
        await request.respond(reply.status, reply.body, reply.content_type, reply.headers)
        return _SENT if reply.status == 200 else Outcome(reply.status, True)

    rid = (b"x-request-id", request.request_id.encode())
    send = request.send
    headers = [(b"content-type", reply.content_type), (b"cache-control", b"no-cache"), rid, *reply.headers]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    idle = _Idle(asyncio.get_running_loop().time())
    pump = asyncio.ensure_future(_pump(reply, send, framing.error_event, idle))
    watcher = asyncio.ensure_future(_watch(request.receive, send, framing.keepalive, keepalive, idle))
    try:
        await asyncio.wait((pump, watcher), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        # This call itself was cancelled (a background response's cancel, a shutdown): the
        # pump is its own task, so it must be stopped here or it would read upstream on.
        pump.cancel()
        if reply.close is not None:
            reply.close()
        raise
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


@dataclass(slots=True)
class _Idle:
    last_sent: float  # loop time of the last event sent to the client
    done: bool = False


async def _pump(reply: Reply, send: Send, error_event: Callable[[str], bytes] | None, idle: _Idle) -> bool:
    assert reply.stream is not None
    complete = True
    clock = asyncio.get_running_loop().time
    try:
        async for run in reply.stream:
            await send({"type": "http.response.body", "body": run, "more_body": True})
            idle.last_sent = clock()
    except StreamBroken as exc:
        log.warning("upstream stream broke: %s", exc)
        if error_event is None:
            idle.done = True
            return False
        await send({"type": "http.response.body", "body": error_event(str(exc)), "more_body": True})
        complete = False
    idle.done = True  # no keep-alive may follow the final frame
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    return complete


async def _watch(receive: Receive, send: Send, ping: bytes, every: float, idle: _Idle) -> None:
    """Return when the client disconnects; meanwhile send `ping` during upstream silences.
    One task does both, so a stream costs no extra task and no per-event timer."""
    loop = asyncio.get_running_loop()
    while True:
        if every <= 0 or idle.done or not ping:
            message = await receive()
        else:
            wait = every - (loop.time() - idle.last_sent)
            if wait <= 0.001:
                await send({"type": "http.response.body", "body": ping, "more_body": True})
                idle.last_sent = loop.time()
                continue
            try:
                message = await asyncio.wait_for(receive(), wait)
            except TimeoutError:
                continue
        if message["type"] == "http.disconnect":
            return
