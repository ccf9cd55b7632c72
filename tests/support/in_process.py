"""The gateway's ASGI app run inside the test process: its own event loop in a thread, the
lifespan driven as a server would, and requests sent through httpx's `ASGITransport` (no
socket, no server process). Bodies are whole when a call returns: a stream is read to its end.

Fake upstreams (`tests/support/fake_*.py`) still listen on 127.0.0.1, so a configured provider
reaches them over real HTTP exactly as in a served gateway.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Self, TypeVar

import httpx2

from tests.support import config_yaml
from unigate.app import GatewayApp, create_app
from unigate.settings import Settings

T = TypeVar("T")
BASE_URL = "http://gateway.test"


class InProcessGateway:
    def __init__(
        self, workdir: Path, config: dict[str, Any] | None = None, env: dict[str, str] | None = None
    ) -> None:
        """`env`: the gateway's whole environment besides its data dir, admin key and config
        (the test process's own is not read: vendor keys there must not leak in)."""
        self.workdir = workdir
        self.admin_key = "uga_test_" + secrets.token_hex(16)
        env = {**(env or {}), "UNIGATE_DATA_DIR": str(workdir / "data"), "UNIGATE_ADMIN_KEY": self.admin_key}
        if config is not None:
            path = workdir / "config.yaml"
            path.write_text(config_yaml.dump(config))
            env["UNIGATE_CONFIG"] = str(path)
        self.settings = Settings.from_env(env)
        self.app: GatewayApp | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._lifespan: asyncio.Queue[dict[str, Any]] | None = None
        self._lifespan_out: asyncio.Queue[dict[str, Any]] | None = None
        self._lifespan_task: asyncio.Future[None] | None = None
        self._client: httpx2.AsyncClient | None = None

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        """Run `coro` on the gateway's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self) -> Self:
        self._thread.start()
        self.run(self._start())
        return self

    async def _start(self) -> None:
        self.app = create_app(self.settings)
        self._lifespan, self._lifespan_out = asyncio.Queue(), asyncio.Queue()
        self._lifespan_task = asyncio.ensure_future(
            self.app({"type": "lifespan"}, self._lifespan.get, self._lifespan_out.put)
        )
        await self._lifespan.put({"type": "lifespan.startup"})
        answer = await self._lifespan_out.get()
        if answer["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"gateway start-up failed: {answer}")
        self._client = self.client()

    def stop(self) -> None:
        if self._thread.is_alive():
            self.run(self._stop())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()  # also one never started

    async def _stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        if self._lifespan is not None and self._lifespan_out is not None:
            await self._lifespan.put({"type": "lifespan.shutdown"})
            await self._lifespan_out.get()
        if self._lifespan_task is not None:
            await self._lifespan_task

    def client(self, **kwargs: Any) -> httpx2.AsyncClient:
        """An httpx client whose requests go straight into the app (use it on this loop)."""
        assert self.app is not None
        return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=self.app), base_url=BASE_URL, **kwargs)

    def request(self, method: str, path: str, key: str | None = None, **kwargs: Any) -> httpx2.Response:
        """One call, answered whole; `key` is sent as a Bearer token (the admin key by default)."""
        assert self._client is not None
        headers = {"Authorization": f"Bearer {key or self.admin_key}", **kwargs.pop("headers", {})}
        return self.run(self._client.request(method, path, headers=headers, timeout=60, **kwargs))

    def create_key(self, **spec: Any) -> str:
        return str(self.create_key_record(**spec)["key"])

    def create_key_record(self, **spec: Any) -> dict[str, Any]:
        """The admin API's answer for a new key: `key` (the secret) and `id`, ..."""
        spec.setdefault("name", "test")
        res = self.request("POST", "/admin/keys", json=spec)
        assert res.status_code == 201, res.text
        return dict(res.json())

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
