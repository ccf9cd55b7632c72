"""The OpenAI chat stream as the translators read and write it: `OpenAIChunkReader` parses one
(an OpenAI upstream's, for clients of another format), `OpenAIChunkWriter` frames one (for
OpenAI clients of another format's upstream). The SSE itself is `sse.py`'s."""

from __future__ import annotations

import time
from typing import Any

from unigate.translate.sse import DONE, SSEEvent, SSEParser, json_event, json_object


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
    return json_event({"error": error})


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
        return out + DONE

    def _event(self, fields: dict[str, Any]) -> bytes:
        head = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }
        return json_event({**head, **fields})

    def _handle(self, events: list[SSEEvent]) -> bytes:
        raise NotImplementedError

    def _completed(self) -> bool:
        raise NotImplementedError

    def _closing(self) -> bytes:
        return b""

    def _usage(self) -> dict[str, Any]:
        raise NotImplementedError
