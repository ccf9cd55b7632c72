"""Base for the fake servers the tests run: an aiohttp app on 127.0.0.1, served from its own
thread and event loop, so tests can drive the gateway synchronously while it is up."""

from __future__ import annotations

import asyncio
import threading
from typing import Self

from aiohttp import web


class LoopbackServer:
    port: int

    def _routes(self, app: web.Application) -> None:
        raise NotImplementedError

    def __post_init__(self) -> None:
        # The fakes are dataclasses: their generated __init__ calls this.
        self._init_server()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _init_server(self) -> None:
        self._runner: web.AppRunner | None = None
        # Made by start(): a fake that is built but never started holds no loop to close.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._shutdown(self._runner), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _start(self) -> None:
        app = web.Application(client_max_size=256 * 1024 * 1024)  # fakes accept big uploads
        self._routes(app)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _shutdown(self, runner: web.AppRunner) -> None:
        await runner.cleanup()
        # Handlers still sleeping (scripted stalls) are cancelled, not left pending.
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
