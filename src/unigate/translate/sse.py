"""Server-sent events, read and written in this one module: every SSE the gateway emits is
framed by `event` (or `json_event`, `comment`), and every upstream stream it reads is cut and
parsed here.

Reading follows the WHATWG framing rules the SDKs rely on: lines end with LF or CRLF, several
`data:` lines join with LF, one space after the colon is optional, `:` lines are comments, and
a blank line dispatches the event. Upstream bytes arrive in arbitrary pieces: a piece may end
mid-line, between the CR and LF of a CRLF pair, or inside a multi-byte UTF-8 character, so
everything here works on bytes and hands out whole events only. Two readers for two needs:
- `EventRuns` cuts a stream into runs of complete events exactly as the upstream framed them,
  for relays that forward the bytes untouched (`split_events` and `event_fields` take a run
  apart where a relay must look inside: usage, a final event);
- `SSEParser` decodes each event to `(name, data)`, for translators that rewrite the stream.

Writing: `event(data, name)` is one event, `data` being one payload (a newline inside it
becomes another `data:` line, so no payload can break the framing).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

SSEEvent = tuple[str | None, bytes]
_EVENT_END = re.compile(rb"\r?\n\r?\n")  # a line's end, then a blank line


# -- writing --


def event(data: bytes, name: str | None = None) -> bytes:
    """One event: its `event:` line when named, its data, the blank line that ends it."""
    if data.find(b"\n") >= 0:
        data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\ndata: ")
    if name is None:
        return b"data: " + data + b"\n\n"
    return b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"


def json_event(obj: Any, name: str | None = None) -> bytes:
    """One event whose data is `obj` as JSON (orjson writes no newline)."""
    data = orjson.dumps(obj)
    if name is None:
        return b"data: " + data + b"\n\n"
    return b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"


def comment(text: bytes) -> bytes:
    """A comment line: every SSE parser skips it (a keep-alive)."""
    return b": " + text + b"\n\n"


DONE = event(b"[DONE]")  # the OpenAI chat stream's last event
# A lone blank line: dispatches nothing, so every parser skips it (a keep-alive for clients,
# google-genai's, whose line reader would choke on a comment).
BLANK_LINE = b"\r\n"


# -- reading --


class EventRuns:
    """Cuts a byte stream into runs of complete events (each run ends with a blank line, LF or
    CRLF), exactly as framed: several events that arrive together stay together (one write).

    An event larger than a read arrives over many reads. The bytes after the last complete
    event are held as one `bytes`, joined to each read: cheapest for the usual event of a few
    hundred bytes, but a copy and a scan of everything held per read. Past `_LONG` bytes (a
    streamed image's base64, a final event carrying the whole response) they are held as
    pieces instead and only each new read is searched (with the three bytes before it, where a
    blank line may have begun): linear in the event's size (1 MB in 1 KB reads: 192 ms of the
    loop before, 2 ms)."""

    __slots__ = ("_buf", "_pieces", "_tail")

    def __init__(self) -> None:
        self._buf = b""  # the bytes after the last complete event, while short
        self._pieces: list[bytes] = []  # or, once long, the pieces they came in
        self._tail = b""  # the last three bytes of the pieces

    def feed(self, data: bytes) -> bytes:
        """The complete events `data` finishes (b"" if none); the rest is kept for later."""
        if self._pieces:
            return self._feed_long(data)
        buf = self._buf + data if self._buf else data
        lf = buf.rfind(b"\n\n")
        crlf = buf.rfind(b"\r\n\r\n")
        cut = max(lf + 2 if lf >= 0 else -1, crlf + 4 if crlf >= 0 else -1)
        if cut < 0:
            if len(buf) > _LONG:
                self._pieces.append(buf)
                self._tail, self._buf = buf[-3:], b""
            else:
                self._buf = buf
            return b""
        self._buf = buf[cut:]
        return buf[:cut]

    def _feed_long(self, data: bytes) -> bytes:
        window = self._tail + data
        lf = window.rfind(b"\n\n")
        crlf = window.rfind(b"\r\n\r\n")
        # Where the last complete event ends in `data` (the pieces hold none).
        cut = max(lf + 2 if lf >= 0 else -1, crlf + 4 if crlf >= 0 else -1) - len(self._tail)
        if cut < 0:
            self._pieces.append(data)
            self._tail = window[-3:]
            return b""
        run = b"".join(self._pieces) + data[:cut]
        self._pieces.clear()
        self._buf = data[cut:]
        return run

    def rest(self) -> bytes:
        """At the end of the stream: an unterminated last event, terminated (b"" if none)."""
        rest = b"".join(self._pieces) if self._pieces else self._buf
        self._pieces.clear()
        self._buf = b""
        return rest + b"\n\n" if rest.strip() else b""


_LONG = 65536  # bytes held from which `EventRuns` and `SSEParser` hold pieces


def split_events(run: bytes) -> list[bytes]:
    """A run of complete events as single events (each with its blank line, however its lines
    end: LF, CRLF, or a mix of both)."""
    out = []
    start = 0
    for end in _EVENT_END.finditer(run):
        out.append(run[start : end.end()])
        start = end.end()
    if start < len(run):
        out.append(run[start:])
    return out


def event_fields(event: bytes) -> SSEEvent:
    """One complete event's name (None if unnamed) and joined data, read by `SSEParser`."""
    parser = SSEParser()
    found = parser.feed(event) + parser.flush()
    return found[0] if found else (None, b"")


def event_data(event: bytes) -> bytes:
    """One complete event's joined `data:` payload."""
    return event_fields(event)[1]


def data_lines(run: bytes) -> int:
    """How many `data:` lines a run holds: an event count for upstreams that send one data line
    an event (OpenAI's), without parsing."""
    return run.count(b"data:")


class SSEParser:
    """Feed raw bytes, get back complete `(event name or None, data)` pairs. Events without
    any `data:` line are dropped.

    A line longer than a read is held after each read, as one `bytes` joined to the next
    while short, and past `_LONG` bytes (a `data:` line carrying an image) as pieces, only
    each new read searched for its end, as `EventRuns` holds an event."""

    def __init__(self) -> None:
        self._buf = b""  # a partial line, while short
        self._pieces: list[bytes] = []  # or, once long, the pieces it came in
        self._name: str | None = None
        self._data: list[bytes] = []

    def feed(self, data: bytes) -> list[SSEEvent]:
        if self._pieces:
            if data.find(b"\n") < 0:
                self._pieces.append(data)
                return []
            self._pieces.append(data)
            buf = b"".join(self._pieces)
            self._pieces = []
        else:
            buf = self._buf + data if self._buf else data
        events: list[SSEEvent] = []
        start = 0
        # The line rules written out in the loop (one event is two lines, each a call otherwise:
        # this runs for every chunk of every translated stream).
        while True:
            end = buf.find(b"\n", start)
            if end < 0:
                break
            line = buf[start:end]
            start = end + 1
            # A CR left at the end of the buffer is held with its line until the LF arrives.
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:  # a blank line dispatches the event
                if self._data:
                    events.append((self._name, b"\n".join(self._data)))
                    self._data = []
                self._name = None
            elif line.startswith(b"data:"):
                self._data.append(line[6:] if line.startswith(b"data: ") else line[5:])
            else:
                self._field(line)
        rest = buf[start:]
        if len(rest) > _LONG:
            self._pieces.append(rest)
            self._buf = b""
        else:
            self._buf = rest
        return events

    def flush(self) -> list[SSEEvent]:
        """End of input: an unterminated last line or event still counts (some upstreams
        close the connection right after the final `data:` line)."""
        held = b"".join(self._pieces) if self._pieces else self._buf
        line, self._buf, self._pieces = held.rstrip(b"\r"), b"", []
        # The last line, ended, and the blank line that dispatches its event.
        return self.feed(line + b"\n\n" if line else b"\n")

    def _field(self, line: bytes) -> None:
        """A line other than a blank one or a `data:` one: a comment, `event:`, or a field
        the gateway has no use for (`id:`, `retry:`)."""
        if line.startswith(b":"):
            return
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"event":
            self._name = value.decode("utf-8", "replace")
        elif field == b"data":  # `data` alone: an empty data line
            self._data.append(value)


def json_object(data: bytes) -> dict[str, Any] | None:
    """A complete event payload as a JSON object, or None (not JSON, or not an object)."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None
