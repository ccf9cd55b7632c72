"""The least a Python proxy on uvloop does per request: no HTTP library, no coroutine per
request, no ASGI, nothing but framing. `bench/floor.py` runs it beside the upstream and unigate
to show what this machine charges any Python proxy at a given load, below which no gateway
written in Python goes.

Each client connection gets one upstream connection; a request is relayed when its head and
`Content-Length` body are in, with its method and path, a fixed `Host`, its `Content-Type` and
`Authorization`, and the answer goes back with the upstream's status line and `Content-Type`.
Chunked bodies are not handled: the benchmark's requests and the fake upstream's answers carry a
length.

Run as a script: `python bench/floor_proxy.py --port 8082 --upstream-port 8080 [--workers 2]`
(a supervisor that forks the workers and stops them when it is stopped).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
from typing import NamedTuple, cast

import uvloop

HEAD_END = b"\r\n\r\n"
_KEPT = (b"content-type", b"authorization")


class Message(NamedTuple):
    start: bytes  # the request line or the status line
    headers: dict[bytes, bytes]  # lower-cased names; a repeated name keeps its last value
    body: bytes


def take_message(buffer: bytearray) -> Message | None:
    """The first complete message in `buffer`, removed from it; None while one is incomplete."""
    end = buffer.find(HEAD_END)
    if end < 0:
        return None
    lines = bytes(buffer[:end]).split(b"\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    size = int(headers.get(b"content-length", b"0"))
    total = end + len(HEAD_END) + size
    if len(buffer) < total:
        return None
    body = bytes(buffer[end + len(HEAD_END) : total])
    del buffer[:total]
    return Message(lines[0], headers, body)


def upstream_request(request: Message) -> bytes:
    method, target = request.start.split(b" ")[:2]
    head = [method + b" " + target + b" HTTP/1.1", b"Host: upstream"]
    head += [name + b": " + request.headers[name] for name in _KEPT if name in request.headers]
    head.append(b"Content-Length: " + str(len(request.body)).encode())
    return b"\r\n".join(head) + HEAD_END + request.body


def client_response(answer: Message) -> bytes:
    head = [answer.start]
    if b"content-type" in answer.headers:
        head.append(b"Content-Type: " + answer.headers[b"content-type"])
    head.append(b"Content-Length: " + str(len(answer.body)).encode())
    return b"\r\n".join(head) + HEAD_END + answer.body


class Upstream(asyncio.Protocol):
    def __init__(self, client: Client) -> None:
        self.client = client
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (answer := take_message(self.buffer)) is not None:
            self.client.answer(answer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.upstream_lost()


class Client(asyncio.Protocol):
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.waiting: list[bytes] = []  # requests that arrived before the upstream connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        asyncio.get_running_loop().create_task(self._dial())

    async def _dial(self) -> None:
        loop = asyncio.get_running_loop()
        upstream, _ = await loop.create_connection(lambda: Upstream(self), "127.0.0.1", self.upstream_port)
        upstream.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.upstream = upstream
        for request in self.waiting:
            upstream.write(request)
        self.waiting.clear()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (request := take_message(self.buffer)) is not None:
            wire = upstream_request(request)
            if self.upstream is None:
                self.waiting.append(wire)
            else:
                self.upstream.write(wire)

    def answer(self, answer: Message) -> None:
        if self.transport is not None:
            self.transport.write(client_response(answer))

    def upstream_lost(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.upstream is not None:
            self.upstream.close()


async def start(sock: socket.socket, upstream_port: int) -> asyncio.AbstractServer:
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: Client(upstream_port), sock=sock)


async def _worker(sock: socket.socket, upstream_port: int) -> None:
    await start(sock, upstream_port)
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    await stopped.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(2048)
    workers = []
    for _ in range(args.workers):
        pid = os.fork()
        if pid == 0:
            uvloop.run(_worker(sock, args.upstream_port))
            os._exit(0)
        workers.append(pid)
    # The supervisor waits; SIGTERM (sent to the whole process group by bench/procs.py) or a
    # worker's exit ends it, and it takes the other workers with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        os.wait()
    finally:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


if __name__ == "__main__":
    main()
