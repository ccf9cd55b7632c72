"""Minimal ASGI plumbing: the request view, body reading with limits, response helpers.

Hand-written instead of a framework request/response so the per-request cost stays in the
tens of microseconds (docs/architecture.md); nothing here knows about families or providers.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any, Final, Protocol
from urllib.parse import parse_qsl

import orjson

from unigate.edge.h1_head import RESPONSE
from unigate.errors import InvalidRequest, PayloadTooLarge

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
RawHeaders = list[tuple[bytes, bytes]]

JSON_CT: Final = b"application/json"
Header = tuple[bytes, bytes]


class ExtraHeaders(Protocol):
    """Headers added to whatever response a request starts (a limited key's `x-ratelimit-*`):
    as pairs for an ASGI `http.response.start`, or as joined lines with their count for a
    `unigate.response` message."""

    def headers(self) -> list[Header]: ...

    def lines(self) -> tuple[bytes, int]: ...


class Request:
    """One inbound HTTP request. Cheap to build: headers are scanned on demand. Its `send`
    remembers the status the client really got (`status`, 0 until a response starts),
    whichever code path sent it."""

    __slots__ = (
        "_query",
        "_send",
        "method",
        "more_headers",
        "params",
        "path",
        "receive",
        "request_id",
        "scope",
        "status",
    )

    def __init__(self, scope: Scope, receive: Receive, send: Send, request_id: str) -> None:
        self.scope = scope
        self.receive = receive
        self._send = send
        self.status = 0
        # When set, adds headers to whatever response starts (a limited key's `x-ratelimit-*`).
        self.more_headers: ExtraHeaders | None = None
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.request_id = request_id
        self.params: dict[str, str] = {}
        self._query: dict[str, str] | None = None

    def send(self, message: Message) -> Awaitable[None]:
        """The server's `send`, the status of `http.response.start` noted on the way. A plain
        call returning the server's awaitable, so each message costs one comparison and no
        extra coroutine (nor, unlike a wrapper object, an allocation per request)."""
        if message["type"] == "http.response.start":
            self.status = message["status"]
            if self.more_headers is not None:
                message["headers"] = [*message.get("headers", ()), *self.more_headers.headers()]
        return self._send(message)

    def respond(
        self, status: int, body: bytes, content_type: bytes = JSON_CT, extra: Sequence[Header] = ()
    ) -> Awaitable[None]:
        """A whole response with a sized body, the request's id (`x-request-id`) among its
        headers. To a server that takes it (the project's own: the `unigate.response` extension
        in the scope) one message with the header lines joined here, which is most of what a
        response costs the server otherwise; to any other the two ASGI messages."""
        rid = self.request_id.encode()
        extensions = self.scope.get("extensions")
        if extensions is None or RESPONSE not in extensions:
            return send_body(self.send, status, body, content_type, [(b"x-request-id", rid), *extra])
        self.status = status
        lines = b"content-type: %s\r\nx-request-id: %s\r\n" % (content_type, rid)
        count = 2
        if extra:
            lines += b"".join([b"%s: %s\r\n" % pair for pair in extra])
            count += len(extra)
        more = self.more_headers
        if more is not None:
            block, lines_more = more.lines()
            lines += block
            count += lines_more
        return self._send({"type": RESPONSE, "status": status, "lines": lines, "count": count, "body": body})

    def header(self, name: bytes) -> bytes | None:
        """The first value of a lower-case header name."""
        return header_of(self.scope["headers"], name)

    def header_count(self, name: bytes) -> int:
        return sum(1 for key, _ in self.scope["headers"] if key == name)

    @property
    def query(self) -> dict[str, str]:
        """The query parameters; 400 for one that is not UTF-8 or holds a NUL, which no
        parameter means and PostgreSQL cannot even compare text with."""
        if self._query is None:
            raw = self.scope.get("query_string", b"")
            self._query = dict(urlencoded(raw, "query string", keep_blank=False))
        return self._query

    async def body(self, limit: int) -> bytes:
        """The whole body; 413 once it is known to exceed `limit` bytes."""
        declared = self.header(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                raise InvalidRequest("Invalid Content-Length header.") from None
            if size > limit:
                await self.drain_body(limit)
                raise PayloadTooLarge(f"Request body exceeds the limit of {limit} bytes.")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnected
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    if message.get("more_body", False):
                        await self.drain_body(limit)
                    raise PayloadTooLarge(f"Request body exceeds the limit of {limit} bytes.")
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def drain_body(self, limit: int) -> None:
        """Read and discard a moderately oversized body so the client, which is still
        sending, gets the 413 instead of a connection reset; give up past a cap."""
        cap = max(limit * 4, 64 * 1024 * 1024)
        seen = 0
        while seen <= cap:
            message = await self.receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                return
            seen += len(message.get("body", b""))

    async def json_object(self, limit: int) -> tuple[bytes, dict[str, Any]]:
        """Raw body and its parsed top-level JSON object; 400 for anything else."""
        raw = await self.body(limit)
        if not raw:
            raise InvalidRequest("The request body is empty; a JSON object is required.")
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InvalidRequest(not_json(self.header(b"content-type"), exc.msg)) from None
        if not isinstance(parsed, dict):
            raise InvalidRequest("The request body must be a JSON object.")
        return raw, parsed


def header_of(headers: Any, name: bytes) -> bytes | None:
    """The first value of the lower-case header `name` among a scope's `headers`."""
    try:
        return _first(headers, name)
    except TypeError:  # not (bytes, bytes) tuples in a list: another server's pairs
        return _first(as_pairs(headers), name)


def _first(headers: RawHeaders, name: bytes) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None


def as_pairs(headers: Any) -> RawHeaders:
    """A scope's `headers` as a list of (bytes, bytes) tuples, what the project's server makes.

    Why the typed read: compiled, a loop over a typed list of pairs costs a fifth of one over
    untyped pairs (~40 against ~190 ns for an API call's headers), and a request's headers are
    read three or four times. A typed read of another server's pairs (lists, say) raises
    TypeError at its first pair; the caller then reads them again through this copy."""
    return [(bytes(key), bytes(value)) for key, value in headers]


_MEDIA_TYPE: Final = re.compile(rb"[A-Za-z0-9!#$&^_.+-]{1,64}/[A-Za-z0-9!#$&^_.+-]{1,64}")


def not_json(content_type: bytes | None, why: str) -> str:
    """Why a body that should be JSON is refused: when the client said it sent something else
    (a multipart form, a urlencoded one), that, and what the endpoint takes."""
    media = _MEDIA_TYPE.match((content_type or b"").strip())
    sent = media.group().decode().lower() if media else ""
    if sent and sent != "application/json" and not sent.endswith("+json"):
        return f"This endpoint takes a JSON body (Content-Type: application/json); the request sent {sent}."
    return f"The request body is not valid JSON: {why}."


def urlencoded(raw: bytes, what: str, keep_blank: bool = True) -> list[tuple[str, str]]:
    """The pairs of a query string or urlencoded form. 400 for one that is not UTF-8 (not
    silently replaced by U+FFFD) or holds a NUL."""
    try:
        pairs = parse_qsl(raw.decode(), keep_blank_values=keep_blank, errors="strict") if raw else []
    except UnicodeDecodeError:
        raise InvalidRequest(f"The {what} is not UTF-8 text.", code="invalid_encoding") from None
    if any("\x00" in name or "\x00" in value for name, value in pairs):
        raise InvalidRequest(f"The {what} holds a NUL character.", code="invalid_encoding")
    return pairs


class ClientDisconnected(Exception):
    """The client went away before the request was complete."""


async def send_body(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes = JSON_CT,
    extra: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_json(send: Send, status: int, payload: Any, extra: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await send_body(send, status, orjson.dumps(payload), JSON_CT, extra)
