"""SSE framing helpers: events cut anywhere by the network come out whole."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from unigate.providers.body_stream import sse_events
from unigate.providers.openai.chat_events import take_usage
from unigate.translate import sse
from unigate.translate.sse import SSEParser, event, event_data, event_fields, json_event, split_events
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


@pytest.mark.parametrize("long", [0, 3, 4, 50])
def test_long_held_bytes_are_cut_the_same(monkeypatch: pytest.MonkeyPatch, long: int) -> None:
    """Past `_LONG` held bytes the runs are searched piece by piece: the same runs at every
    split point and a byte at a time, LF and CRLF."""
    monkeypatch.setattr(sse, "_LONG", long)
    test_every_split_point_yields_whole_events()
    test_byte_at_a_time_and_crlf()
    test_every_line_form_decodes_the_same_however_cut()
    test_relay_runs_and_decoded_events_agree()
    test_a_line_larger_than_its_reads()


def test_an_event_larger_than_its_reads() -> None:
    """A streamed image's event (base64, ~1 MB) in 1 KB reads, then small events, and one left
    unterminated at the end: each comes out whole, once."""
    image = b"event: image\r\ndata: " + b"QUJD" * 250_000 + b"\r\n\r\n"
    stream = image + STREAM + b"data: last"
    runs = _collect([stream[i : i + 1024] for i in range(0, len(stream), 1024)])
    assert b"".join(runs) == stream + b"\n\n"
    events = [e for r in runs for e in split_events(r)]
    assert events[0] == image and len(events) == 5 and events[-1] == b"data: last\n\n"


def test_a_line_larger_than_its_reads() -> None:
    """The decoder reads the same image event in 1 KB reads (and a byte at a time around it):
    its data whole, once, then the small events, and the unterminated last one at the end."""
    image = b"event: image\r\ndata: " + b"QUJD" * 250_000 + b"\r\n\r\n"
    stream = image + STREAM + b"data: last"
    parser = SSEParser()
    events = [e for i in range(0, len(stream), 1024) for e in parser.feed(stream[i : i + 1024])]
    events += parser.flush()
    assert events[0] == ("image", b"QUJD" * 250_000)
    assert len(events) == 5 and events[-1] == (None, b"last")
    small = SSEParser()
    tail = STREAM + b"data: last"
    assert [e for i in range(len(tail)) for e in small.feed(tail[i : i + 1])] + small.flush() == events[1:]


def test_usage_chunk_taken_and_stripped() -> None:
    usage = Usage()
    kept, found = take_usage(STREAM, usage, strip=True)
    assert found and usage.prompt_tokens == 3 and usage.completion_tokens == 2
    assert b'"usage"' not in kept and kept.endswith(b"data: [DONE]\n\n")
    usage2 = Usage()
    assert take_usage(STREAM, usage2, strip=False) == (STREAM, True) and usage2.completion_tokens == 2
    assert take_usage(b'data: {"usage": null}\n\n', Usage(), strip=True)[1] is False


def test_event_data_joins_lines() -> None:
    assert event_data(b'event: x\ndata: {"a":\ndata: 1}\n\n') == b'{"a":\n1}'
    assert event_data(b"data:{}\n\n") == b"{}"


def test_what_is_written_reads_back_the_same() -> None:
    payloads = [b'{"a": 1}', b"[DONE]", b"line one\nline two", b"crlf\r\ninside", b""]
    for name in (None, "message_start"):
        for data in payloads:
            written = event(data, name)
            assert written.endswith(b"\n\n") and b"\n\n" not in written[:-2], written
            assert event_fields(written) == (name, data.replace(b"\r\n", b"\n")), written
            parser = SSEParser()
            assert parser.feed(written) == [(name, data.replace(b"\r\n", b"\n"))]
    obj = {"type": "ping", "text": "two\nlines"}
    assert json_event(obj, "ping") == event(json_event(obj)[6:-2], "ping")


def test_every_line_form_decodes_the_same_however_cut() -> None:
    """Each line form the parser reads (`data:` with and without its space, a bare `data`, a
    name with and without its space, a comment, an id, a retry, CR LF and LF, an event without
    data) decodes the same at every split point and at the end of input."""
    stream = (
        b"data: a\r\ndata:b\r\ndata\r\n\r\n: note\nevent:x\ndata:  two spaces\n\n"
        b"event: y\nid: 7\nretry: 5\n\nevent: z\ndata: {}\n\ndata: unterminated\r"
    )
    whole = SSEParser()
    expected = whole.feed(stream) + whole.flush()
    assert expected == [(None, b"a\nb\n"), ("x", b" two spaces"), ("z", b"{}"), (None, b"unterminated")]
    for cut in range(1, len(stream)):
        parser = SSEParser()
        assert parser.feed(stream[:cut]) + parser.feed(stream[cut:]) + parser.flush() == expected, cut


def test_relay_runs_and_decoded_events_agree() -> None:
    """The two readers cut the same stream the same way, whatever the pieces."""
    stream = b"event: a\r\ndata: 1\r\n\r\n: a comment\n\nevent: b\ndata: 2\ndata: 3\n\ndata:4\n\n"
    decoded = SSEParser().feed(stream)
    assert decoded == [("a", b"1"), ("b", b"2\n3"), (None, b"4")]
    for cut in range(1, len(stream)):
        runs = _collect([stream[:cut], stream[cut:]])
        events = [event_fields(e) for r in runs for e in split_events(r) if event_data(e)]
        assert events == decoded, cut
