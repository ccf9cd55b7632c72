"""One keep-alive HTTP/1.1 connection of the upstream client (pool.py): the httptools parser's
callbacks, flow control both ways, and writing a request (head, then body whole or streamed)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import Final, cast

import httptools

from unigate.transport.errors import ConnectionBroken
from unigate.transport.interfaces import ConnectionOwner, StreamedBody
from unigate.transport.response import Response
from unigate.write_batch import WriteBatch

WRITE_CHUNK: Final = 64 * 1024  # bodies up to this size go out in the same write as the head
# Response head limits: generous for any API, small enough that a flood costs nothing.
MAX_HEADER_BYTES: Final = 64 * 1024
MAX_HEADERS: Final = 200


class Connection(asyncio.Protocol):
    """One keep-alive connection; carries one request at a time (`response`)."""

    def __init__(self, pool: ConnectionOwner[Connection]) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # set once connected
        self.writes: WriteBatch | None = None  # the loop's, set once connected
        self.parser = httptools.HttpResponseParser(self)
        self.response: Response | None = None
        self.closed = False
        self.writing = False  # a streamed body is still being written
        self.idle_since = 0.0
        self._write_paused = False
        self._read_paused = False
        self._drained: asyncio.Future[None] | None = None
        self.header_bytes = 0
        # The answer's header fields as they arrive, handed to its `Response` whole (one
        # Python call per field, not two: an API's answer carries 10-30 of them).
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.fresh = False  # opened for the request about to use it (not a reused one)

    # -- asyncio.Protocol --

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCP transports are not asyncio.Transport subclasses; same interface.
        self.transport = cast(asyncio.Transport, transport)
        self.loop = asyncio.get_running_loop()  # once here, not per request (a getpid call each on 3.11)
        self.writes = WriteBatch.of(self.loop)  # requests are written at the end of the loop's turn
        self.pool.opened(self)

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:
            self.abort()  # bytes nobody asked for: the connection is no longer in a known state
            return
        response.received = True
        response.last = response.loop.time()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            response.fail(ConnectionBroken(f"malformed upstream response ({type(exc).__name__})"))
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.transport = None
        self.pool.lost(self)
        response = self.response
        if response is not None:
            self.response = None
            response.connection_lost()
        if self._drained is not None and not self._drained.done():
            # The upload stops (`send_request` sees `closed`); the request then reports what the
            # response came to: its answer, a timeout, or the close before an answer.
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # -- httptools callbacks --

    def on_header(self, name: bytes, value: bytes) -> None:
        raw = self.raw_headers
        raw.append((name, value))
        # Bounded: an upstream (or whatever answers on its address) flooding headers must not
        # grow the gateway's memory; the answer fails like a malformed one.
        self.header_bytes += len(name) + len(value)
        if self.header_bytes > MAX_HEADER_BYTES or len(raw) > MAX_HEADERS:
            raw.clear()
            if self.response is not None:
                too_many = f"{MAX_HEADERS} fields or {MAX_HEADER_BYTES} bytes"
                self.response.fail(ConnectionBroken(f"the upstream's response headers exceed {too_many}"))
            self.abort()

    def on_headers_complete(self) -> None:
        raw, self.raw_headers = self.raw_headers, []  # per message (a 1xx has its own)
        self.header_bytes = 0
        if self.response is not None:
            self.response.headers_done(self.parser.get_status_code(), raw)

    def on_body(self, body: bytes) -> None:
        if self.response is not None:
            self.response.feed(body)

    def on_message_complete(self) -> None:
        response = self.response
        if response is None or not response.message_complete():
            return  # an interim 1xx answer; the real one follows on the same connection
        self.response = None
        if self.parser.should_keep_alive() and not self.writing and not self.closed:
            self.resume_reading()  # the body may have ended while a slow reader had us paused
            self.pool.release(self)
        elif self.writing:
            # Answered mid-upload (413): drop the rest. close() would wait to flush an upload
            # the upstream no longer reads, so the blocked writer would never be woken.
            self.abort()
        else:
            self.close()

    # -- used by Pool and Response --

    def start(self, response: Response) -> None:
        self.response = response

    def write(self, data: bytes) -> None:
        assert self.transport is not None and self.writes is not None
        self.writes.later(self.transport, data)

    async def drain(self) -> None:
        if self._write_paused and not self.closed:
            self._drained = asyncio.get_running_loop().create_future()
            try:
                await self._drained
            finally:
                self._drained = None

    def pause_reading(self) -> None:
        if self.transport is not None and not self.closed and not self._read_paused:
            self._read_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and not self.closed and self._read_paused:
            self._read_paused = False
            self.transport.resume_reading()

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.closed = True  # never handed out again, even before connection_lost runs
            assert self.writes is not None  # set with the transport
            self.writes.close(self.transport)

    def abort(self) -> None:
        """Drop the connection now: its state is unknown (cancelled or broken request). A
        request still held (`WriteBatch`) is never sent."""
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()


def send_request(conn: Connection, head: bytes, body: bytes | StreamedBody) -> Awaitable[None] | None:
    """Write the request: a bytes body at once (None), a streamed one by the returned awaitable
    (no coroutine for the common case, whose request task would pass through its frame)."""
    if isinstance(body, bytes):
        if len(body) <= WRITE_CHUNK:
            conn.write(head + body)  # one write, one segment for the common small request
        else:
            conn.write(head)
            conn.write(body)
        return None
    return _upload(conn, head, body)


async def _upload(conn: Connection, head: bytes, body: StreamedBody) -> None:
    conn.write(head)
    conn.writing = True
    try:
        # `conn.response` is only ever tested through a local: it changes during the await, and
        # a compiled module trusts an attribute that a test narrowed even across one (mypy keeps
        # the narrowing), raising TypeError when the answer came and the connection let go of it.
        for chunk in body.chunks():
            before = conn.response
            if conn.closed or before is None:
                break  # the upstream already answered (e.g. 413) or hung up: stop uploading
            conn.write(chunk)
            await conn.drain()
            after = conn.response
            if after is not None:
                # Upload progress is not upstream silence: the read timeout counts from here.
                after.last = after.loop.time()
    finally:
        conn.writing = False
    answered = conn.response
    if answered is None and not conn.closed:
        conn.close()  # answered before the body was all sent: the connection is out of step


def render(headers: Mapping[str, str]) -> bytes:
    return "".join(f"{_token(k)}: {_value(v)}\r\n" for k, v in headers.items()).encode("latin-1")


def _token(name: str) -> str:
    if not name or any(c in name for c in " \t\r\n:"):
        raise ValueError(f"invalid header name {name!r}")
    return name


def _value(value: str) -> str:
    if "\r" in value or "\n" in value:
        raise ValueError("header values may not contain line breaks")
    return value
