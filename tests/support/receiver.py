"""A webhook receiver on 127.0.0.1 that verifies Standard Webhooks signatures and records
every delivery. `fail_next` answers that many requests with 500 first; `down` answers 503;
`gone` answers 410 Gone (after recording the delivery)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.net import free_port
from unigate.webhooks.signing import SignatureError, verify


@dataclass
class Delivered:
    webhook_id: str
    timestamp: int
    body: dict[str, Any]
    valid_signature: bool


@dataclass
class WebhookReceiver(LoopbackServer):
    secret: str = ""
    fail_next: int = 0
    down: bool = False
    gone: bool = False
    received: list[Delivered] = field(default_factory=list)
    attempts: int = 0
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._init_server()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/hook", self._hook)

    async def _hook(self, request: web.Request) -> web.Response:
        raw = await request.read()
        with self._lock:
            self.attempts += 1
            if self.down:
                return web.Response(status=503)
            if self.fail_next > 0:
                self.fail_next -= 1
                return web.Response(status=500)
            try:
                verify(self.secret, dict(request.headers), raw)
                valid = True
            except (SignatureError, ValueError):
                valid = False
            self.received.append(
                Delivered(
                    request.headers["webhook-id"],
                    int(request.headers["webhook-timestamp"]),
                    orjson.loads(raw),
                    valid,
                )
            )
            if self.gone:
                return web.Response(status=410)
        return web.Response(status=204)

    def statuses(self, task_id: str) -> list[str]:
        with self._lock:
            return [d.body["data"]["status"] for d in self.received if d.body["data"]["task_id"] == task_id]

    def snapshot(self) -> list[Delivered]:
        with self._lock:
            return list(self.received)

    def take(self) -> list[Delivered]:
        """The deliveries so far, forgotten here (a long test's list does not grow)."""
        with self._lock:
            taken, self.received = self.received, []
            return taken
