"""A byte-level HTTP/1.1 server on 127.0.0.1 for the upstream client's tests (every byte it
sends is written by the test), and the helpers those tests share."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

import pytest
import uvloop

from unigate.transport.interfaces import StreamedBody
from unigate.transport.pool import Pool
from unigate.transport.response import Response

T = TypeVar("T")
LOOPS = ["asyncio", "uvloop"]


def _run(loop: str, coro: Coroutine[Any, Any, T]) -> T:
    factory = uvloop.new_event_loop if loop == "uvloop" else None
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coro)


@pytest.fixture(params=LOOPS)
def loop(request: pytest.FixtureRequest) -> str:
    """Both loops: asyncio's and uvloop's transports differ."""
    name: str = request.param
    return name


# -- the server side, byte for byte --


@dataclass
class Req:
    line: str
    fields: list[tuple[str, str]]
    body: bytes

    def values(self, name: str) -> list[str]:
        return [v for k, v in self.fields if k.lower() == name.lower()]


class Peer:
    """The server's end of one accepted connection."""

    def __init__(self, server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.index = server.connections  # 1 for the first connection accepted
        self.reader = reader
        self.writer = writer
        self.requests = 0

    async def request(self, body: bool = True) -> Req | None:
        """The next request (None at a clean EOF); `body=False` leaves the body unread."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            assert not exc.partial, f"request head cut off: {exc.partial!r}"
            return None
        line, *lines = head[:-4].decode("latin-1").split("\r\n")
        fields = [(k, v) for k, _, v in (x.partition(": ") for x in lines)]
        size = int(next((v for k, v in fields if k.lower() == "content-length"), "0"))
        data = await self.reader.readexactly(size) if body and size else b""
        req = Req(line, fields, data)
        self.requests += 1
        self.server.requests.append(req)
        return req

    async def send(self, *pieces: bytes, gap: float = 0.0) -> None:
        """Each piece in its own write (its own TCP segment when `gap` > 0)."""
        for piece in pieces:
            self.writer.write(piece)
            await self.writer.drain()
            if gap:
                await asyncio.sleep(gap)

    async def closed_by_client(self, timeout: float = 1.0) -> bool:
        """Whether the client closes the connection within `timeout` (data is discarded)."""
        try:
            async with asyncio.timeout(timeout):
                while await self.reader.read(65536):
                    pass
        except TimeoutError:
            return False
        except ConnectionError:
            pass
        self.server.eofs += 1
        return True


Handler = Callable[[Peer], Awaitable[None]]


@dataclass
class Server:
    handler: Handler
    tls: ssl.SSLContext | None = None
    host: str = "127.0.0.1"
    rcvbuf: int | None = None  # a small receive buffer makes a non-reading server block writers
    connections: int = 0
    eofs: int = 0
    requests: list[Req] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    def url(self, path: str = "", host: str = "127.0.0.1") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"

    async def __aenter__(self) -> Server:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP, or asyncio leaves Nagle on and small writes get coalesced.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.rcvbuf is not None:  # inherited by accepted sockets
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        sock.bind((self.host, 0))
        self._server = await asyncio.start_server(self._accept, sock=sock, ssl=self.tls)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        if kind is None and self.errors:
            raise self.errors[0]  # an assertion or bug in a handler fails the test

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self.handler(Peer(self, reader, writer))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client hung up: some tests do that on purpose
        except asyncio.CancelledError:
            pass
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            writer.close()
            self._tasks.discard(task)


def ok(body: bytes = b"ok", *fields: str) -> bytes:
    extra = "".join(f"{f}\r\n" for f in fields)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def answer(response: bytes) -> Handler:
    """Answer every request on the connection with `response`, until it says close."""

    async def handle(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(response)
            if b"connection: close" in response.lower():
                return

    return handle


async def call(
    pool: Pool,
    path: str = "/",
    body: bytes | StreamedBody = b"",
    *,
    read: float = 1.0,
    total: float = 5.0,
    headers: dict[str, str] | None = None,
    method: str = "POST",
    replay: bool | None = True,
) -> Response:
    return await pool.request(
        method, path, body, connect=1.0, read=read, total=total, headers=headers, replay=replay
    )


async def until(check: Callable[[], bool], timeout: float = 1.0) -> None:
    """Wait for the server side to catch up (it runs on the same loop)."""
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.002)


async def fetch(pool: Pool, path: str = "/") -> bytes:
    resp = await call(pool, path)
    assert resp.status == 200
    return await resp.read()


@contextlib.asynccontextmanager
async def pool_for(
    server: Server,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    keepalive: float | None = None,
) -> AsyncIterator[Pool]:
    """A Pool for `server` (its root URL unless `url` says otherwise), closed on the way out."""
    url = server.url() if url is None else url
    headers = {} if headers is None else headers
    pool = Pool(url, headers) if keepalive is None else Pool(url, headers, keepalive=keepalive)
    try:
        yield pool
    finally:
        await pool.aclose()
