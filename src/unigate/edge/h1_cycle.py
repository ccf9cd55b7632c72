"""One request and its response on an HTTP/1.1 connection: the ASGI `receive` and `send` the app
is called with (`h1_protocol.py` parses the request and owns the connection).

A response whose head announces a Content-Length is held until its first body bytes and both
go out in one `transport.write`: each write is a system call when the socket is writable, and
the two writes a head and body otherwise take were a large share of a worker's CPU for a
proxied reply. A chunked stream's head, a HEAD request's, or one without body bytes to come
is written at once. A whole sized response in one `unigate.response` message (h1_head.py)
goes out the same way without the two ASGI messages, the head's header-by-header join or its
framing object.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final

from unigate.edge.h1_head import NO_BODY_STATUSES, RESPONSE, Framing, build_head, sized_head

if TYPE_CHECKING:
    from unigate.edge.asgi import Message, Scope
    from unigate.edge.h1_protocol import H1Protocol

HIGH_WATER: Final = 65536  # body bytes buffered for the app before reading from the client pauses
CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"
LAST_CHUNK: Final = b"0\r\n\r\n"
INTERNAL_ERROR: Final = [
    (b"content-type", b"text/plain; charset=utf-8"),
    (b"content-length", b"21"),
    (b"connection", b"close"),
]
logger: Final = logging.getLogger("uvicorn.error")  # the lines uvicorn's own protocol wrote, as before


async def wait_shared(future: asyncio.Future[None]) -> None:
    """Await a future other callers may await too (two receive() calls, say the app's and a
    disconnect watcher's): one caller's cancellation cancels the future itself, which for the
    others only means "look again", not that they were cancelled."""
    try:
        await future
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise


class Cycle:
    """The state of one request-response exchange."""

    __slots__ = (
        "body",
        "chunked",
        "complete",
        "conn",
        "disconnected",
        "expect_continue",
        "handed_all",
        "held",
        "keep_alive",
        "no_body",
        "received_all",
        "remaining",
        "scope",
        "started",
        "waiter",
    )

    def __init__(self, conn: H1Protocol, scope: Scope, keep_alive: bool, expect_continue: bool) -> None:
        self.conn = conn
        self.scope = scope
        self.keep_alive = keep_alive
        self.expect_continue = expect_continue  # `100 Continue` owed on the first receive()
        self.no_body = scope["method"] == "HEAD"
        # Request body: bytes not yet handed to the app; all of it arrived; all of it handed.
        self.body = b""
        self.received_all = False
        self.handed_all = False
        self.waiter: asyncio.Future[None] | None = None  # receive() waiting for news
        self.disconnected = False
        # Response.
        self.started = False
        self.complete = False
        self.chunked = False
        self.remaining = 0  # Content-Length bytes still owed
        self.held: bytes | None = None  # a sized head waiting for its body

    # -- called by the connection --

    def add_body(self, data: bytes) -> None:
        body = self.body + data if self.body else data
        self.body = body
        if len(body) > HIGH_WATER:
            self.conn.pause_reading()
        self.wake()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # -- the ASGI callables --

    async def run(self, app: Any) -> None:
        try:
            result = await app(self.scope, self.receive, self.send)
        except BaseException as exc:
            logger.error("Exception in ASGI application\n", exc_info=exc)
            if not self.started:
                self.fail()
            else:
                self.abort()
        else:
            if result is not None:
                logger.error("ASGI callable should return None, but returned '%s'.", result)
                self.abort()
            elif not self.started and not self.disconnected:
                logger.error("ASGI callable returned without starting response.")
                self.fail()
            elif not self.complete and not self.disconnected:
                logger.error("ASGI callable returned without completing response.")
                self.abort()

    async def receive(self) -> Message:
        if self.expect_continue:
            self.expect_continue = False
            if not self.conn.transport.is_closing():
                self.conn.writes.now(self.conn.transport, CONTINUE)
        while True:
            if self.disconnected or self.complete:
                return {"type": "http.disconnect"}
            body = self.body
            if body or (self.received_all and not self.handed_all):
                self.body = b""
                self.handed_all = self.received_all
                if self.conn.reading_paused and self.conn.cycle is self:
                    self.conn.resume_reading()
                return {"type": "http.request", "body": body, "more_body": not self.received_all}
            if self.conn.reading_paused and self.conn.cycle is self:
                self.conn.resume_reading()
            waiter = self.waiter
            if waiter is None or waiter.done():
                waiter = self.waiter = self.conn.loop.create_future()
            await wait_shared(waiter)

    async def send(self, message: Message) -> None:
        conn = self.conn
        if conn.writing_paused and not self.disconnected:
            await conn.drain()
        if self.disconnected:
            return
        kind = message["type"]
        if not self.started:
            if kind == RESPONSE:
                self.respond(message)
            elif kind != "http.response.start":
                raise RuntimeError(f"Expected ASGI message 'http.response.start', but got '{kind}'.")
            else:
                self.start(message)
        elif not self.complete:
            if kind != "http.response.body":
                raise RuntimeError(f"Expected ASGI message 'http.response.body', but got '{kind}'.")
            self.write_body(message.get("body", b""), message.get("more_body", False))
        else:
            raise RuntimeError(f"Unexpected ASGI message '{kind}' sent, after response already completed.")

    # -- the response --

    def head(self, status: int, headers: Any, framing: Framing) -> bytes:
        shared = self.conn.shared
        shared.server_lines.refresh(shared.state.default_headers)
        return build_head(
            status,
            headers,
            shared.server_lines,
            framing,
            add_chunked=not self.no_body and status not in NO_BODY_STATUSES,
            add_close=not self.keep_alive,
        )

    def start(self, message: Message) -> None:
        framing = Framing()
        head = self.head(message["status"], message.get("headers", ()), framing)
        self.started = True
        self.expect_continue = False
        if framing.close:
            self.keep_alive = False
        self.chunked = framing.chunked
        self.remaining = framing.length if framing.length > 0 else 0
        if self.remaining and not self.no_body:
            self.held = head
        else:
            self.conn.writes.later(self.conn.transport, head)

    def respond(self, message: Message) -> None:
        """A `RESPONSE` message: head and body in one write, the response complete."""
        status, body = message["status"], message["body"]
        sized = status not in NO_BODY_STATUSES
        shared = self.conn.shared
        shared.server_lines.refresh(shared.state.default_headers)
        head = sized_head(
            status, message["lines"], message["count"], shared.server_lines, len(body) if sized else -1,
            not self.keep_alive,
        )  # fmt: skip
        self.started = self.complete = True
        self.expect_continue = False
        conn = self.conn
        conn.writes.later(conn.transport, head + body if body and sized and not self.no_body else head)
        self.completed(conn.transport)

    def completed(self, transport: Any) -> None:
        """The response's last byte is written: wake a waiting `receive`, close a connection
        not kept alive, let the connection go on."""
        self.wake()
        if not self.keep_alive:
            self.conn.writes.close(transport)
        self.conn.response_done(self)

    def write_body(self, body: bytes, more: bool) -> None:
        transport = self.conn.transport
        later = self.conn.writes.later
        if self.no_body:
            self.remaining = 0
        elif self.chunked:
            if body:
                later(
                    transport,
                    b"".join((b"%x\r\n" % len(body), body, b"\r\n0\r\n\r\n" if not more else b"\r\n")),
                )
            elif not more:
                later(transport, LAST_CHUNK)
        else:
            size = len(body)
            if size > self.remaining:
                raise RuntimeError("Response content longer than Content-Length")
            self.remaining -= size
            held = self.held
            if held is not None:
                if size:
                    self.held = None
                    later(transport, held + body)
            elif size:
                later(transport, body)
        if not more:
            if self.remaining:
                raise RuntimeError("Response content shorter than Content-Length")
            self.complete = True
            self.completed(transport)

    def fail(self) -> None:
        """Answer 500 and close (the app failed before starting its response)."""
        self.started = self.complete = True
        self.keep_alive = False
        transport = self.conn.transport
        if not self.disconnected and not transport.is_closing():
            head = self.head(500, INTERNAL_ERROR, Framing())
            self.conn.writes.now(transport, head + b"Internal Server Error")
            transport.close()
        self.wake()
        self.conn.response_done(self)

    def abort(self) -> None:
        """Close the connection mid-response (the app failed after starting it); a held head
        goes first, so the client sees how far the response got."""
        held, self.held = self.held, None
        transport = self.conn.transport
        if held is not None and not transport.is_closing():
            self.conn.writes.now(transport, held)
        self.conn.writes.close(transport)
