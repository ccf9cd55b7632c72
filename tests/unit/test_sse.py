"""SSE framing helpers: events cut anywhere by the network come out whole."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from unigate.providers.http import event_data, split_events, sse_events
from unigate.providers.openai.compatible import _take_usage
from unigate.usage.recorder import Usage

STREAM = (
    'data: {"choices":[{"delta":{"content":"h\u00e9llo"}}]}\n\n'
    'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
    "data: [DONE]\n\n"
).encode()


class _Resp:
    """Just what `sse_events` reads of an upstream response: its body as it arrives."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    async def iter_any(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece


def _collect(pieces: list[bytes]) -> list[bytes]:
    async def run() -> list[bytes]:
        return [run async for run in sse_events(_Resp(pieces))]  # type: ignore[arg-type]

    return asyncio.run(run())


def test_every_split_point_yields_whole_events() -> None:
    for cut in range(1, len(STREAM)):
        runs = _collect([STREAM[:cut], STREAM[cut:]])
        assert b"".join(runs) == STREAM
        assert all(r.endswith(b"\n\n") for r in runs)
        events = [e for r in runs for e in split_events(r)]
        assert len(events) == 3


def test_byte_at_a_time_and_crlf() -> None:
    crlf = STREAM.replace(b"\n\n", b"\r\n\r\n")
    runs = _collect([crlf[i : i + 1] for i in range(len(crlf))])
    assert b"".join(runs) == crlf and len(runs) == 3


def test_usage_chunk_taken_and_stripped() -> None:
    usage = Usage()
    kept, found = _take_usage(STREAM, usage, strip=True)
    assert found and usage.prompt_tokens == 3 and usage.completion_tokens == 2
    assert b'"usage"' not in kept and kept.endswith(b"data: [DONE]\n\n")
    usage2 = Usage()
    assert _take_usage(STREAM, usage2, strip=False) == (STREAM, True) and usage2.completion_tokens == 2
    assert _take_usage(b'data: {"usage": null}\n\n', Usage(), strip=True)[1] is False


def test_event_data_joins_lines() -> None:
    assert event_data(b'event: x\ndata: {"a":\ndata: 1}\n\n') == b'{"a":\n1}'
    assert event_data(b"data:{}\n\n") == b"{}"
