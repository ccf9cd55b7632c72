"""Streams as the unit tests read them: a translator fed in network-sized pieces, and its
output decoded back into JSON events."""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from unigate.translate.sse import SSEParser


class Translator(Protocol):
    def feed(self, data: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


def feed_in_pieces(translator: Translator, data: bytes, step: int) -> bytes:
    """What `translator` writes for `data` arriving `step` bytes at a time, and at its end."""
    out = b"".join(translator.feed(data[i : i + step]) for i in range(0, len(data), step))
    return out + translator.finish()


def json_events(data: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of a stream's events (`[DONE]` left out)."""
    parser = SSEParser()
    return [orjson.loads(body) for _, body in parser.feed(data) + parser.flush() if body != b"[DONE]"]
