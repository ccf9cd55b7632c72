"""`bench/floor_proxy.py`, the least-work proxy `bench/floor.py` measures beside unigate, relays
what the benchmark sends: framing across split reads and pipelined requests, the headers it
keeps, and the upstream's status and body back, over real loopback sockets."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from floor_proxy import start, take_message

REQUEST = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"
    b'Content-Type: application/json\r\nX-Other: dropped\r\nContent-Length: 7\r\n\r\n{"a":1}'
)


def test_a_message_is_taken_once_complete_and_the_next_stays_buffered() -> None:
    buffer = bytearray(REQUEST[:50])
    assert take_message(buffer) is None
    buffer += REQUEST[50:-3]
    assert take_message(buffer) is None  # the head is in, the body is not
    buffer += REQUEST[-3:] + REQUEST[:20]
    message = take_message(buffer)
    assert message is not None
    assert message.start == b"POST /v1/chat/completions HTTP/1.1"
    assert message.headers[b"authorization"] == b"Bearer k"
    assert message.body == b'{"a":1}'
    assert bytes(buffer) == REQUEST[:20]


class _Upstream(asyncio.Protocol):
    """Answers each request with a 201 and a numbered body; `seen` gets the requests' bytes."""

    def __init__(self, seen: list[bytes], ended: asyncio.Event) -> None:
        self.seen, self.ended, self.buffer = seen, ended, b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            size = int(self.buffer[:end].lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            if len(self.buffer) < end + 4 + size:
                return
            self.seen.append(self.buffer[: end + 4 + size])
            self.buffer = self.buffer[end + 4 + size :]
            body = b'{"ok":%d}' % len(self.seen)
            reply = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nServer: up\r\n"
            self.transport.write(reply + b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended.set()


async def _relay_twice() -> None:
    seen: list[bytes] = []
    ended = asyncio.Event()
    loop = asyncio.get_running_loop()
    upstream = await loop.create_server(lambda: _Upstream(seen, ended), "127.0.0.1", 0)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    proxy = await start(listener, upstream.sockets[0].getsockname()[1])
    reader, writer = await asyncio.open_connection(*listener.getsockname())
    writer.write(REQUEST + REQUEST)  # two pipelined in one write
    answers = [await reader.readuntil(b"}") for _ in range(2)]
    writer.close()
    await writer.wait_closed()
    await ended.wait()  # the proxy closed its upstream connection with the client's
    proxy.close()
    upstream.close()
    assert answers[0].startswith(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n")
    assert answers[0].endswith(b'\r\n\r\n{"ok":1}') and answers[1].endswith(b'{"ok":2}')
    assert b"Server" not in answers[0]
    assert seen[0] == (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: upstream\r\ncontent-type: application/json\r\n"
        b'authorization: Bearer k\r\nContent-Length: 7\r\n\r\n{"a":1}'
    )
    assert seen[1] == seen[0]


def test_requests_are_relayed_in_order_with_the_upstreams_answers() -> None:
    asyncio.run(_relay_twice())
