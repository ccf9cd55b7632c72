"""A response head from preformatted bytes, for the HTTP/1.1 protocol (`h1_protocol.py`).

The status line comes from a table, the server's own headers (`date`, refreshed once a second
by uvicorn's server loop, and `server`) are joined into bytes once per change, and the app's
header lines are joined without looking at each byte: the finished head is checked once, by
counting its line ends and looking for a NUL. A name or value carrying CR, LF or NUL (values
can be relayed from upstreams) would split the head into lines the app never wrote, so such a
response is refused (`BadHeader`) instead of written.

A whole sized response sent as one `unigate.response` message (`RESPONSE`, the extension this
server advertises in the scope) brings its header lines already joined, with their count:
`sized_head` adds the status line, the server's lines and the framing and checks the count.
"""

from __future__ import annotations

import http
from collections.abc import Iterable
from typing import Final

from unigate.edge.h1_refusal import BadHeader

NO_BODY_STATUSES: Final = frozenset({204, 304})
# The ASGI extension message of a whole sized response: {"type": RESPONSE, "status": int,
# "lines": b"name: value\r\n..." (never the framing's content-length, transfer-encoding or
# connection), "count": the number of those lines, "body": bytes}. Advertised in the scope's
# "extensions" under the same name.
RESPONSE: Final = "unigate.response"
EXTENSIONS: Final[dict[str, dict[str, object]]] = {RESPONSE: {}}
_CLOSE: Final = b"connection: close\r\n"


def _status_line(status: int) -> bytes:
    try:
        phrase = http.HTTPStatus(status).phrase.encode()
    except ValueError:
        phrase = b""
    return b"HTTP/1.1 %d %s\r\n" % (status, phrase)


STATUS_LINES: Final = {status: _status_line(status) for status in range(100, 600)}


class Framing:
    """How one response's body is framed, read from its headers while the head is joined."""

    __slots__ = ("chunked", "close", "length")

    def __init__(self) -> None:
        self.length = -1  # the Content-Length, -1 when none was given
        self.chunked = False  # the app said Transfer-Encoding: chunked
        self.close = False  # the app said Connection: close


class ServerLines:
    """The server's own header lines as bytes, rebuilt only when uvicorn's server loop replaces
    its `default_headers` list (once a second, for the date)."""

    __slots__ = ("_source", "count", "lines")

    def __init__(self) -> None:
        self._source: object = None
        self.lines = b""
        self.count = 0  # how many lines `lines` holds

    def refresh(self, default_headers: list[tuple[bytes, bytes]]) -> None:
        if default_headers is not self._source:
            self.lines = b"".join(b"%s: %s\r\n" % (name, value) for name, value in default_headers)
            self.count = len(default_headers)
            self._source = default_headers


def _lower_token(value: bytes) -> bytes:
    return value.strip().lower()


def build_head(
    status: int,
    headers: Iterable[tuple[bytes, bytes]],
    server: ServerLines,
    framing: Framing,
    add_chunked: bool,
    add_close: bool,
) -> bytes:
    """The head's bytes: status line, the server's lines, the app's, then what the framing
    needs (`transfer-encoding: chunked` when the app gave no length, `connection: close`).
    `add_chunked` says whether a body without a length is chunked here (not for HEAD, 204,
    304); `add_close` whether the connection closes after this response."""
    parts = [_status_line_of(status), server.lines]
    count = 0
    for name, value in headers:
        size = len(name)
        # Only three names matter to the framing; their lengths spare the others a lower().
        if size == 14 and framing.length < 0 and not framing.chunked and name.lower() == b"content-length":
            try:
                framing.length = int(value)
            except ValueError:
                raise BadHeader(f"Invalid Content-Length {value[:40]!r}.") from None
        elif size == 17 and name.lower() == b"transfer-encoding" and _lower_token(value) == b"chunked":
            framing.length = -1
            framing.chunked = True
        elif (
            size == 10
            and name.lower() == b"connection"
            and b"close" in (_lower_token(token) for token in value.split(b","))
        ):
            framing.close = True
        parts += (name, b": ", value, b"\r\n")
        count += 1
    if framing.length < 0 and not framing.chunked and add_chunked:
        framing.chunked = True
        parts.append(b"transfer-encoding: chunked\r\n")
        count += 1
    if add_close and not framing.close:
        parts.append(b"connection: close\r\n")
        count += 1
    parts.append(b"\r\n")
    return _checked(b"".join(parts), 2 + count + server.count)


def sized_head(status: int, lines: bytes, count: int, server: ServerLines, length: int, close: bool) -> bytes:
    """The head of a `RESPONSE`: `lines` (`count` lines, joined by the app) between the status
    and server lines and the framing's: `content-length: length` (none when `length` < 0: 204,
    304) and `connection: close` when `close`. Checked as `build_head` checks its head."""
    line = _status_line_of(status)
    ends = 2 + count + server.count
    if length >= 0:
        framing = b"content-length: %d\r\n%s" % (length, _CLOSE if close else b"")
        ends += 2 if close else 1
    else:
        framing = _CLOSE if close else b""
        ends += 1 if close else 0
    return _checked(b"%s%s%s%s\r\n" % (line, server.lines, lines, framing), ends)


def _status_line_of(status: int) -> bytes:
    try:
        return STATUS_LINES[status]
    except (KeyError, TypeError):
        raise BadHeader(f"Invalid HTTP status code {status!r}.") from None


def _checked(head: bytes, ends: int) -> bytes:
    """`head`, whose every line end must be one its builder wrote (`ends` of them: status line,
    server lines, the app's lines, framing, the blank line): a name or value holding CR, LF or
    NUL would otherwise split it into lines the app never wrote."""
    # `find`, not `in`, which on Python 3.11 builds and drops a TypeError each time (h1_protocol)
    if head.count(b"\n") != ends or head.count(b"\r") != ends or head.find(b"\0") >= 0:
        raise BadHeader("Invalid HTTP header: a name or value holds CR, LF or NUL.")
    return head
