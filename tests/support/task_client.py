"""Helpers for the asynchronous families' end-to-end tests: poll any family's task query until
its state is one of the wanted ones (keeping the states seen on the way, to check the order a
task moved through), and serve input files (videos, audio, images) from 127.0.0.1."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.net import HTTPResult, free_port, http


def multipart(
    fields: dict[str, str], files: dict[str, tuple[str, bytes, str]] | None = None
) -> tuple[bytes, str]:
    """(body, content type) of a multipart/form-data form; `files` maps a field name to
    (filename, data, content type)."""
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    for name, (filename, data, content_type) in (files or {}).items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: {content_type}\r\n\r\n"
        )
        parts.append(head.encode() + data + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


@dataclass
class Polled:
    final: dict[str, Any]  # the last answer, whose state is one of the wanted ones
    states: list[Any]  # every distinct state seen, in order (the first answer's included)


def poll_until(
    fetch: Callable[[], dict[str, Any]],
    state_of: Callable[[dict[str, Any]], Any],
    until: Collection[Any],
    timeout: float = 30.0,
    interval: float = 0.1,
) -> Polled:
    """Call `fetch` until `state_of` its answer is in `until`; AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    states: list[Any] = []
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        last = fetch()
        state = state_of(last)
        if not states or states[-1] != state:
            states.append(state)
        if state in until:
            return Polled(last, states)
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s in states {states}; last answer: {last}")


@dataclass
class TaskClient:
    """One API key's view of a gateway: JSON calls with the family's auth header."""

    base_url: str
    headers: dict[str, str]

    def call(
        self, method: str, path: str, body: bytes | dict[str, Any] | None = None, **headers: str
    ) -> HTTPResult:
        return http(method, self.base_url + path, body, {**self.headers, **headers})

    def get_json(self, path: str) -> dict[str, Any]:
        res = self.call("GET", path)
        assert res.status == 200, (path, res.status, res.body)
        found: dict[str, Any] = res.json()
        return found

    def wait(
        self,
        path: str,
        state_of: Callable[[dict[str, Any]], Any],
        until: Collection[Any],
        timeout: float = 30.0,
    ) -> Polled:
        return poll_until(lambda: self.get_json(path), state_of, until, timeout)


@dataclass
class FileServer(LoopbackServer):
    """Serves `files` (name -> bytes) at `url(name)`; a missing name is a 404."""

    files: dict[str, bytes] = field(default_factory=dict)
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/files/{name}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_get("/files/{name}", self._file)

    async def _file(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["name"])
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")
