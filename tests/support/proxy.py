"""A forward HTTP proxy on 127.0.0.1 for egress tests: CONNECT tunnels (https upstreams) and
absolute-form requests (plain http), recording what it was asked. Only loopback targets."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field
from types import TracebackType
from urllib.parse import urlsplit


@dataclass
class ForwardProxy:
    require_auth: str | None = None  # the Proxy-Authorization value to insist on
    requests: list[str] = field(default_factory=list)  # request lines, in order
    auths: list[str | None] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> ForwardProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)  # type: ignore[arg-type]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, *lines = head[:-4].decode("latin-1").split("\r\n")
        fields = {k.lower(): v for k, _, v in (x.partition(": ") for x in lines)}
        self.requests.append(line)
        self.auths.append(fields.get("proxy-authorization"))
        if self.require_auth and fields.get("proxy-authorization") != self.require_auth:
            writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            return
        method, target, _ = line.split(" ", 2)
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            up_reader, up_writer = await asyncio.open_connection(host.strip("[]"), int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await _pipe_both(reader, writer, up_reader, up_writer)
            return
        # Absolute form: forward this one request (and the rest of the connection) as bytes.
        parts = urlsplit(target)
        assert parts.hostname in ("127.0.0.1", "localhost"), "the test proxy only reaches loopback"
        up_reader, up_writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        up_writer.write(f"{method} {path} HTTP/1.1\r\n".encode("latin-1") + head.split(b"\r\n", 1)[1])
        await _pipe_both(reader, writer, up_reader, up_writer)


async def _pipe_both(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        dst.close()

    try:
        await asyncio.gather(pipe(a_reader, b_writer), pipe(b_reader, a_writer))
    finally:
        b_writer.close()


class ThreadedProxy:
    """A ForwardProxy served from its own thread and loop, for tests that drive the real
    gateway process synchronously."""

    def __init__(self, require_auth: str | None = None) -> None:
        self.proxy = ForwardProxy(require_auth=require_auth)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> ForwardProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.proxy.__aenter__(), self._loop).result(10)
        return self.proxy

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.__aexit__(None, None, None), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()  # its selector and self-pipe, or they are a ResourceWarning
