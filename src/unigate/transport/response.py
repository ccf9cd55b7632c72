"""The response side of the HTTP/1.1 client (pool.py): status and headers, the body buffered
as it arrives, read whole or relayed chunk by chunk, with read and total timeouts.

Both timeouts are one due time, the earlier of "`read` seconds after the last byte" and the
deadline, watched by the pool's one timer (deadlines.py), not a timer per response: a
chunk's arrival costs a clock read, never a timer reschedule.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Final, overload

from unigate.transport.deadlines import Deadlines
from unigate.transport.errors import ConnectionBroken, UpstreamError, UpstreamTimeout
from unigate.transport.interfaces import Reading

# Reading pauses while more than this much of a body waits for a slow consumer, and resumes
# when the consumer next takes what is buffered (all of it, at once).
HIGH_WATER: Final = 1024 * 1024
_NO_BODY: Final = frozenset({204, 304})
# Requests say `Accept-Encoding: identity`; an upstream that compresses anyway is decoded here
# (gzip and zlib-wrapped deflate), so nothing downstream relays bytes under the wrong label.
_DECODED: Final = frozenset({"gzip", "x-gzip", "deflate"})


class Headers:
    """Response headers: names case-insensitive, repeated fields joined with ", ". Decoded into
    a map at the first use that needs all of them; a lookup before that scans the raw fields
    (the relay reads an answer's encoding and content type only: decoding an API answer's
    20-odd fields for them cost more than the rest of reading the answer)."""

    __slots__ = ("_map", "_raw")

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._raw = raw
        self._map: dict[str, str] | None = None

    def _fields(self) -> dict[str, str]:
        found = self._map
        if found is None:
            found = {}
            for name, value in self._raw:
                key = name.decode("latin-1").lower()
                text = value.decode("latin-1")
                found[key] = f"{found[key]}, {text}" if key in found else text
            self._map = found
        return found

    @overload
    def get(self, name: str) -> str | None: ...
    @overload
    def get(self, name: str, default: str) -> str: ...
    def get(self, name: str, default: str | None = None) -> str | None:
        if self._map is not None:
            return self._map.get(name.lower(), default)
        key = name.lower().encode("latin-1")
        size = len(key)
        text = None
        for field, value in self._raw:
            if len(field) == size and field.lower() == key:
                found = value.decode("latin-1")
                text = found if text is None else f"{text}, {found}"
        return default if text is None else text

    def __getitem__(self, name: str) -> str:
        return self._fields()[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._fields()

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields())

    def __len__(self) -> int:
        return len(self._fields())

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields().items())


class Response:
    _fed: bool = False  # a compressed body arrived (set only on that rare path, hence a class default)

    def __init__(
        self,
        conn: Reading,
        loop: asyncio.AbstractEventLoop,
        read: float,
        deadline: float,
        deadlines: Deadlines,
        decode: bool = True,
    ) -> None:
        self.status = 0
        self._decode = decode
        self.headers = Headers([])
        self.path = ""  # the request's URL path (no query), for error messages
        self.received = False  # any byte of an answer arrived
        self.last = loop.time()  # loop time of the last byte received
        self.loop = loop
        self._conn: Reading | None = conn
        self._read = read
        self._deadline = deadline
        self._head: asyncio.Future[None] = loop.create_future()
        self._chunks: list[bytes] = []
        self._size = 0
        self._paused = False
        self._whole = False  # read() takes the body whole: no flow control
        self._interim = False
        self._done = False
        self._error: UpstreamError | None = None
        self._decoder: zlib._Decompress | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._deadlines = deadlines
        deadlines.add(self, min(deadline, self.last + read), loop)

    # -- the reader's side --

    def wait_headers(self) -> asyncio.Future[None]:
        """Awaited for the status and headers (the future itself: no coroutine frame for
        the request's task to pass through when it resumes)."""
        return self._head

    async def read(self) -> bytes:
        """The whole body."""
        # All of it is held in the end anyway; pausing would only stall it until `total`.
        self._whole = True
        if self._paused:
            self._resume()
        while not self._done:
            waiter = self._waiter = self.loop.create_future()  # `_wait`, inlined: one frame less
            await waiter
        if self._error is not None:
            raise self._error
        chunks = self._chunks
        self._chunks = []
        self._size = 0
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def iter_any(self) -> AsyncIterator[bytes]:
        """The body as it arrives: everything buffered so far, each time."""
        return _Arrivals(self)

    async def next_arrival(self) -> bytes | None:
        """Everything buffered so far, waiting for a first byte if none is; None at the end."""
        while True:
            if self._chunks:
                chunks = self._chunks
                self._chunks = []
                self._size = 0
                if self._paused:
                    self._resume()
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)
            if self._error is not None:
                raise self._error
            if self._done:
                return None
            await self._wait()

    def hold(self, body: bytes, headers: Headers) -> None:
        """Replace a body already read whole (and the headers) with these, which `read` and
        `iter_any` then answer: an error answer scrubbed of secrets before any adapter reads
        it (providers/http.py)."""
        assert self._done and self._error is None
        self._chunks = [body] if body else []
        self._size = len(body)
        self.headers = headers

    def release(self) -> None:
        """Done with this response; an unread rest of the body closes the connection."""
        if not self._done:
            conn = self._conn
            self._finish(ConnectionBroken("the response was released before its end"))
            if conn is not None:
                conn.abort()

    def close(self) -> None:
        self.release()

    # -- the connection's side --

    def headers_done(self, status: int, raw: list[tuple[bytes, bytes]]) -> None:
        """The answer's status and header fields are in (`raw`, as they arrived)."""
        if status < 200:  # 100 Continue, 103 Early Hints: not the answer
            self._interim = True
            return
        self.status = status
        self.headers = Headers(raw)
        if not self._head.done():
            self._head.set_result(None)
        encoding = self.headers.get("content-encoding") if self._decode else None
        if encoding is not None:
            self._decode_as(encoding.strip().lower())

    def _decode_as(self, encoding: str) -> None:
        if encoding in ("", "identity"):
            return
        if encoding in _DECODED:
            self._decoder = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib header
        else:
            self.fail(ConnectionBroken(f"the upstream sent a {encoding}-encoded body, which is not decoded"))

    def feed(self, body: bytes) -> None:
        if self._done:
            return  # failed already (an undecodable body): the rest is dropped
        if self._decoder is not None:
            self._fed = True
            try:
                body = self._decoder.decompress(body)
            except zlib.error:
                self.fail(ConnectionBroken("the upstream's compressed body is corrupt"))
                return
            if not body:
                return
        self._chunks.append(body)
        self._size += len(body)
        if self._size > HIGH_WATER and not self._paused and not self._whole and self._conn is not None:
            self._paused = True
            self._conn.pause_reading()
        self._wake()

    def message_complete(self) -> bool:
        """False for an interim (1xx) message, which ends nothing."""
        if self._interim:
            self._interim = False
            return False
        decoder = self._decoder
        if decoder is not None and not self._done:
            tail = decoder.flush()
            if tail:
                self._chunks.append(tail)
                self._size += len(tail)
            if self._fed and not decoder.eof:  # an empty body (204, HEAD) has no stream to end
                self._finish(ConnectionBroken("the upstream's compressed body is truncated"))
                return True
        self._finish(None)
        return True

    def connection_lost(self) -> None:
        if self._done:
            return
        headers = self.headers
        if (
            self.status
            and self.status not in _NO_BODY
            and "content-length" not in headers
            and "transfer-encoding" not in headers
        ):
            self._finish(None)  # a body delimited by the end of the connection
        else:
            self._finish(ConnectionBroken("the upstream closed the connection mid-response"))

    def fail(self, error: UpstreamError) -> None:
        self._finish(error)

    def discard(self) -> None:
        """The request failed before its answer: nothing more will come or be read."""
        self._finish(ConnectionBroken("request abandoned"))
        if self._head.done() and not self._head.cancelled():
            self._head.exception()  # retrieved: no "never retrieved" warning

    # -- internals --

    def _finish(self, error: UpstreamError | None) -> None:
        if self._done:
            return
        self._done = True
        self._error = error
        self._conn = None
        self._deadlines.discard(self)
        if not self._head.done():
            if error is None:
                error = ConnectionBroken("the upstream closed the connection before answering")
            self._head.set_exception(error)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def _wait(self) -> None:
        self._waiter = self.loop.create_future()
        await self._waiter

    def _resume(self) -> None:
        self._paused = False
        if self._conn is not None:
            self._conn.resume_reading()
        self.last = self.loop.time()  # the silence while paused was ours, not the upstream's

    # -- watched by the pool's Deadlines --

    def due(self) -> float:
        quiet_since = self.loop.time() if self._paused else self.last  # paused: our doing
        return min(self._deadline, quiet_since + self._read)

    def time_out(self, now: float) -> None:
        if self._done:
            return
        conn = self._conn
        what = "total time" if now >= self._deadline else "read timeout"
        self._finish(UpstreamTimeout(f"the upstream exceeded the {what}"))
        if conn is not None:
            conn.abort()


class _Arrivals:
    """`Response.iter_any`'s iterator: a class, not an async generator, so the module compiles
    (mypyc has no async generators)."""

    __slots__ = ("_response",)

    def __init__(self, response: Response) -> None:
        self._response = response

    def __aiter__(self) -> _Arrivals:
        return self

    async def __anext__(self) -> bytes:
        data = await self._response.next_arrival()
        if data is None:
            raise StopAsyncIteration
        return data
