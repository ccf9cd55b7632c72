"""Incremental SSE parsing shared by the stream translators.

Upstream bytes arrive in arbitrary pieces: a piece may end mid-line, between the CR and LF of a
CRLF pair, or inside a multi-byte UTF-8 character. The parser therefore works on bytes only and
hands out an event's data once its terminating blank line has arrived; callers decode (or
`orjson.loads`) complete payloads, never fragments.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

SSEEvent = tuple[str | None, bytes]


class SSEParser:
    """Feed raw bytes, get back complete `(event name or None, data)` pairs.

    Follows the WHATWG framing rules the SDKs rely on: lines end with LF or CRLF, several
    `data:` lines join with LF, one space after the colon is optional, `:` lines are comments,
    and a blank line dispatches the event. Events without any `data:` line are dropped.
    """

    def __init__(self) -> None:
        self._buf = b""
        self._name: str | None = None
        self._data: list[bytes] = []

    def feed(self, data: bytes) -> list[SSEEvent]:
        self._buf += data
        events: list[SSEEvent] = []
        start = 0
        while True:
            end = self._buf.find(b"\n", start)
            if end < 0:
                break
            line = self._buf[start:end]
            start = end + 1
            # A CR left at the end of the buffer is held with its line until the LF arrives.
            self._line(line[:-1] if line.endswith(b"\r") else line, events)
        self._buf = self._buf[start:]
        return events

    def flush(self) -> list[SSEEvent]:
        """End of input: an unterminated last line or event still counts (some upstreams
        close the connection right after the final `data:` line)."""
        events: list[SSEEvent] = []
        if self._buf:
            line, self._buf = self._buf, b""
            self._line(line.rstrip(b"\r"), events)
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                events.append((self._name, b"\n".join(self._data)))
            self._name, self._data = None, []
            return
        if line.startswith(b":"):
            return
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            self._data.append(value)
        elif field == b"event":
            self._name = value.decode("utf-8", "replace")


def json_object(data: bytes) -> dict[str, Any] | None:
    """A complete event payload as a JSON object, or None (not JSON, or not an object)."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


class OpenAIChunkReader:
    """The input side shared by every translator fed an OpenAI chat stream: parses its SSE and
    hands each chunk, `[DONE]` and in-band error to the subclass until the stream has ended."""

    def __init__(self) -> None:
        self._parser = SSEParser()
        self._done = False
        self._errored = False

    def feed(self, data: bytes) -> bytes:
        return self._handle(self._parser.feed(data))

    def _rest(self) -> bytes:
        """What the last, unterminated event still produces (call from `finish`)."""
        return self._handle(self._parser.flush())

    def _handle(self, events: list[SSEEvent]) -> bytes:
        out = b""
        for _name, data in events:
            if self._done or self._errored:
                break
            if data.strip() == b"[DONE]":
                out += self._on_done()
                continue
            obj = json_object(data)
            if obj is None:
                continue
            out += self._on_error(obj["error"]) if obj.get("error") else self._on_chunk(obj)
        return out

    def _on_chunk(self, chunk: dict[str, Any]) -> bytes:
        raise NotImplementedError

    def _on_done(self) -> bytes:
        raise NotImplementedError

    def _on_error(self, error: Any) -> bytes:
        raise NotImplementedError


CUT_OFF = "The upstream stream ended before completion."


def openai_error_chunk(message: str, kind: str, code: str | None) -> bytes:
    """The in-band error an OpenAI SDK raises on (no `[DONE]` follows it)."""
    error = {"message": message, "type": kind, "param": None, "code": code}
    return b"data: " + orjson.dumps({"error": error}) + b"\n\n"


class OpenAIChunkWriter:
    """The output side shared by every translator that turns another format's stream into an
    OpenAI chat stream: parses the upstream's SSE, frames chunks, and ends the stream — with
    the usage chunk and `[DONE]` when the upstream completed, with an in-band error when it
    was cut off. Subclasses handle events (`_handle`), say whether the upstream completed
    (`_completed`) and what closes a completed stream before the usage chunk (`_closing`)."""

    def __init__(self, model: str, include_usage: bool, created: int | None = None) -> None:
        self.model = model
        self.include_usage = include_usage
        self.created = int(time.time()) if created is None else created
        self.broken = False
        self._id: str | None = None
        self._parser = SSEParser()
        self._errored = False

    def feed(self, data: bytes) -> bytes:
        return self._handle(self._parser.feed(data))

    def finish(self) -> bytes:
        out = self._handle(self._parser.flush())
        if self._errored:
            return out  # The error event already ended the stream for the client.
        if not self._completed():
            self.broken = True
            return out + openai_error_chunk(CUT_OFF, "upstream_error", "stream_broken")
        out += self._closing()
        if self.include_usage:
            out += self._event({"choices": [], "usage": self._usage()})
        return out + b"data: [DONE]\n\n"

    def _event(self, fields: dict[str, Any]) -> bytes:
        head = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }
        return b"data: " + orjson.dumps({**head, **fields}) + b"\n\n"

    def _handle(self, events: list[SSEEvent]) -> bytes:
        raise NotImplementedError

    def _completed(self) -> bool:
        raise NotImplementedError

    def _closing(self) -> bytes:
        return b""

    def _usage(self) -> dict[str, Any]:
        raise NotImplementedError
