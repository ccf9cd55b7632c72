"""A response's head and body in one write (`edge/one_write.py`): a sized head waits for its
body, everything else is written as it comes, and a head whose body never came still goes
out before the connection closes."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from unigate.edge.one_write import HeadWithBody

SIZED = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n"
CHUNKED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


class Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else None


def _wrap() -> tuple[HeadWithBody, Transport]:
    transport = Transport()
    return HeadWithBody(cast(asyncio.Transport, transport)), transport


def test_a_sized_head_goes_out_with_its_body() -> None:
    wrapped, transport = _wrap()
    wrapped.write(SIZED)
    assert transport.writes == []
    wrapped.write(b"{}")
    wrapped.write(SIZED)  # a later write that looks like a head is body: never held
    assert transport.writes == [SIZED + b"{}", SIZED]
    assert wrapped.get_extra_info("peername") == ("127.0.0.1", 1)  # the rest is the transport's


def test_streams_and_interim_answers_are_written_at_once() -> None:
    wrapped, transport = _wrap()
    wrapped.write(CHUNKED)
    wrapped.write(b"5\r\nhello\r\n")
    assert transport.writes == [CHUNKED, b"5\r\nhello\r\n"]
    continued, sent = _wrap()
    continued.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    continued.write(SIZED)
    assert sent.writes == [b"HTTP/1.1 100 Continue\r\n\r\n", SIZED]


def test_a_held_head_is_written_before_the_close() -> None:
    wrapped, transport = _wrap()
    wrapped.write(SIZED)
    wrapped.close()
    assert transport.writes == [SIZED] and transport.closed
