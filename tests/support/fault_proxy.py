"""A TCP fault proxy on 127.0.0.1 between the gateway and a fake upstream: passes bytes through,
or injects one fault per connection, chosen by `mode` at the time the connection is made:

  pass          bytes both ways, untouched
  latency       the upstream's answer delayed by `delay` seconds
  reset         the request is read, then the connection is reset (RST)
  half_open     the request is read, then nothing: no answer, no close
  slow_body     the answer trickles, `chunk` bytes every `delay` seconds
  truncate      the answer is cut after its head and a few bytes of body, then closed
  header_flood  an answer with 500 header fields, never the upstream's
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from dataclasses import dataclass, field

from tests.support.net import free_port


@dataclass
class FaultProxy:
    upstream_port: int
    mode: str = "pass"
    delay: float = 0.3
    chunk: int = 16
    port: int = field(default_factory=free_port)
    connections: int = 0

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    def set_mode(self, mode: str) -> None:
        """Switch the fault; connections already open are closed, so the next request opens
        a new one that gets it (the gateway keeps connections alive between requests)."""
        self.mode = mode

        def close_all() -> None:
            for writer in list(self._open):
                writer.transport.abort()

        self._loop.call_soon_threadsafe(close_all)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()  # its selector and self-pipe, or they are a ResourceWarning

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        mode = self.mode
        self._open.add(writer)
        try:
            if mode == "pass" or mode == "latency" or mode == "slow_body":
                await self._relay(reader, writer, mode)
                return
            await reader.readuntil(b"\r\n\r\n")  # the request head: the upstream "saw" it
            if mode == "reset":
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
            elif mode == "half_open":
                await asyncio.sleep(3600)
            elif mode == "truncate":
                writer.write(
                    b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"id":'
                )
                await writer.drain()
                writer.close()
            elif mode == "header_flood":
                flood = b"".join(b"X-Flood-%d: %s\r\n" % (i, b"v" * 100) for i in range(500))
                writer.write(b"HTTP/1.1 200 OK\r\n" + flood + b"Content-Length: 2\r\n\r\n{}")
                await writer.drain()
                writer.close()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            writer.close()
        finally:
            self._open.discard(writer)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, mode: str) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)

        async def forward() -> None:
            with contextlib.suppress(ConnectionError):
                while data := await reader.read(65536):
                    up_writer.write(data)
                    await up_writer.drain()
            up_writer.close()

        async def backward() -> None:
            with contextlib.suppress(ConnectionError):
                first = True
                while data := await up_reader.read(65536):
                    if mode == "latency" and first:
                        await asyncio.sleep(self.delay)
                    first = False
                    if mode == "slow_body":
                        for i in range(0, len(data), self.chunk):
                            writer.write(data[i : i + self.chunk])
                            await writer.drain()
                            await asyncio.sleep(self.delay)
                    else:
                        writer.write(data)
                        await writer.drain()
            writer.close()

        await asyncio.gather(forward(), backward(), return_exceptions=True)
