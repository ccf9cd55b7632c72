"""What both native batch adapters share (providers/batch_http.py): result files read line by
line as they arrive, whatever the chunking, with bad lines skipped and named in the log and
error lines scrubbed of the provider's secrets; request bodies spooled, not held whole; usage in
either vendor's words."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from unigate.providers import batch_http
from unigate.providers.base import RouteFailed
from unigate.providers.batch_http import Spooled, jsonl_objects, token_usage
from unigate.providers.redact import Redactor
from unigate.transport.errors import ConnectionBroken
from unigate.transport.response import Response

SECRET = "sk-line-secret-0123456789"


class Chunks:
    """A response body arriving in the given pieces (then, optionally, a broken connection)."""

    def __init__(self, pieces: list[bytes], broken: bool = False) -> None:
        self.pieces = pieces
        self.broken = broken
        self.released = False

    async def iter_any(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece
        if self.broken:
            raise ConnectionBroken("connection reset")

    def release(self) -> None:
        self.released = True


def read(body: Chunks, **options: Any) -> list[dict[str, Any]]:
    async def main() -> list[dict[str, Any]]:
        return [line async for line in jsonl_objects(cast(Response, body), "test file", **options)]

    return asyncio.run(main())


def test_lines_split_anywhere_are_joined(caplog: pytest.LogCaptureFixture) -> None:
    body = Chunks([b'{"a":', b"1}\n", b'{"b":2}\r\n\n{"c"', b":", b"3}\nnot json\n[1]\n", b'{"d":4}'])
    with caplog.at_level(logging.WARNING, logger="unigate.providers"):
        assert read(body) == [{"a": 1}, {"b": 2}, {"c": 3}, {"d": 4}]
    assert body.released
    assert [r.getMessage() for r in caplog.records] == [
        "test file: line 5 is not a JSON object; skipped",
        "test file: line 6 is not a JSON object; skipped",
    ]


def test_secrets_are_blanked_from_lines_not_clean() -> None:
    line = b'{"ok": %s, "message": "key %s refused"}\n'
    body = Chunks([line % (b"false", SECRET.encode()), line % (b"true", SECRET.encode())])
    lines = read(body, redactor=Redactor([SECRET]), clean=lambda parsed: parsed["ok"] is True)
    assert SECRET not in lines[0]["message"]
    assert lines[1]["message"] == f"key {SECRET} refused", "a clean line is left as it is"


def test_a_line_without_end_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_http, "MAX_LINE", 10)
    body = Chunks([b'{"a": "', b"x" * 8, b"x" * 8])
    with pytest.raises(RouteFailed, match="has a line longer than 10 bytes"):
        read(body)
    assert body.released


def test_a_broken_download_is_a_route_failure() -> None:
    body = Chunks([b'{"a":1}\n{"b"'], broken=True)
    seen: list[dict[str, Any]] = []

    async def main() -> None:
        async for line in jsonl_objects(cast(Response, body), "test file"):
            seen.append(line)

    with pytest.raises(RouteFailed, match="The upstream test file broke off: connection reset"):
        asyncio.run(main())
    assert seen == [{"a": 1}] and body.released


def test_a_spooled_body_streams_what_was_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_http, "SPOOL_IN_MEMORY", 1000)
    pieces = [bytes([65 + n % 26]) * 100 for n in range(50)]
    spool = Spooled(iter(pieces))
    try:
        assert spool.length == 5000
        assert spool.file.fileno() >= 0, "past the in-memory size, the spool is a temporary file"
        assert b"".join(spool.chunks()) == b"".join(pieces)
        assert b"".join(spool.chunks()) == b"".join(pieces), "chunks start over (a replayed request)"
    finally:
        spool.close()


@pytest.mark.parametrize(
    ("body", "usage"),
    [
        ({"usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}, (3, 4)),
        ({"usage": {"input_tokens": 5, "output_tokens": 6, "cache_read_input_tokens": 9}}, (5, 6)),
        ({"usage": {"prompt_tokens": 8, "total_tokens": 8}}, (8, 0)),  # an embedding
        ({"usage": {"prompt_tokens": "3", "completion_tokens": -1}}, (0, 0)),
        ({"object": "list"}, (0, 0)),
        (None, (0, 0)),
    ],
)
def test_usage_in_either_vendors_words(body: Any, usage: tuple[int, int]) -> None:
    assert token_usage(body) == {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
