"""A fake upstream on 127.0.0.1 that answers every vendor protocol with an error quoting the
credentials it received (`Authorization`, `x-api-key`, `api-key`, `x-goog-api-key`,
`X-API-KEY`, custom credential headers, `?key=`) in its body and in its headers: what some real
upstreams do, and what the gateway must never pass on.

Providers point at `{url}/{protocol}` (so the first path segment names the wire format to
answer in). A marker anywhere in the request (path, query or body) picks the behaviour:
  (none)      4xx in the protocol's error shape
  ratelimit   429 with the credentials in Retry-After
  inband      200 stream whose second event is an error quoting the credentials
  envelope    200 whose body is the vendor's error envelope (Kling, Suno, PicWish, Vidu)
  pollfail    a submit that succeeds and a job that then fails, quoting the credentials
It records every credential value it was sent (`credentials`), for the tests to look for.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.net import free_port

_CREDENTIAL = re.compile(r"auth|key|token", re.I)
_BENIGN = {"host", "content-length", "content-type", "user-agent", "accept-encoding", "accept", "connection"}


@dataclass
class FakeEcho(LoopbackServer):
    port: int = field(default_factory=free_port)
    credentials: set[str] = field(default_factory=set)
    paths: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._init_server()
        self._ids = itertools.count(1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._handle)

    def _echo(self, request: web.Request) -> tuple[str, dict[str, str]]:
        """What the request carried that is not plain HTTP, quoted as an upstream would."""
        quoted = []
        for name, value in request.headers.items():
            if name.lower() in _BENIGN:
                continue
            quoted.append(f"{name}: {value}")
            if not _CREDENTIAL.search(name):
                continue  # quoted all the same, but not a credential (anthropic-version, model)
            self.credentials.add(value)
            scheme, _, rest = value.partition(" ")
            if rest and scheme.lower() in ("bearer", "token", "basic"):
                self.credentials.add(rest)
        for name, value in request.query.items():
            quoted.append(f"{name}={value}")
            if name in ("key", "api_key"):
                self.credentials.add(value)
        text = "Invalid request; you sent " + "; ".join(quoted) + f" query={request.query_string}"
        auth = request.headers.get("Authorization") or request.headers.get("x-api-key") or ""
        headers = {
            "X-Echo-Credentials": "; ".join(quoted).encode("latin-1", "replace").decode("latin-1"),
            "WWW-Authenticate": f'Bearer error="invalid_token", token="{auth}"',
        }
        return text, headers

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.paths.append(request.path_qs)
        protocol = request.path.strip("/").split("/", 1)[0]
        where = (request.path_qs.encode() + b" " + raw).lower()
        echo, headers = self._echo(request)
        if b"pollfail" in where:
            return self._pollfail(request, protocol, echo)
        if b"ratelimit" in where:
            return web.json_response(_error(protocol, 429, echo), status=429,
                                     headers={**headers, "Retry-After": echo[-60:]})  # fmt: skip
        if b"inband" in where:
            return await self._inband(request, protocol, echo, headers)
        if b"envelope" in where:
            return web.json_response(_error(protocol, 400, echo), status=200, headers=headers)
        return web.json_response(_error(protocol, 400, echo), status=400, headers=headers)

    def _pollfail(self, request: web.Request, protocol: str, echo: str) -> web.Response:
        if request.method == "POST":  # the submit: accepted
            task_id = f"pollfail-{next(self._ids)}"
            if protocol == "kling":
                data = {"task_id": task_id, "task_status": "submitted"}
                return web.json_response({"code": 0, "message": "SUCCEED", "request_id": "r", "data": data})
            return web.json_response({"task_id": task_id, "state": "created"})
        parts = request.path.rstrip("/").split("/")
        task_id = parts[-2] if parts[-1] == "creations" else parts[-1]  # Vidu: /tasks/{id}/creations
        if protocol == "kling":
            data = {"task_id": task_id, "task_status": "failed", "task_status_msg": echo}
            return web.json_response({"code": 0, "message": "SUCCEED", "request_id": "r", "data": data})
        return web.json_response({"id": task_id, "state": "failed", "err_code": echo})

    async def _inband(
        self, request: web.Request, protocol: str, echo: str, headers: dict[str, str]
    ) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if protocol == "anthropic":
            usage = {"input_tokens": 3, "output_tokens": 1}
            message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
                       "stop_reason": None, "stop_sequence": None, "usage": usage}  # fmt: skip
            start = {"type": "message_start", "message": message}
            error = {"type": "error", "error": {"type": "overloaded_error", "message": echo}}
            await resp.write(b"event: message_start\ndata: " + orjson.dumps(start) + b"\n\n")
            await resp.write(b"event: error\ndata: " + orjson.dumps(error) + b"\n\n")
        elif protocol == "gemini":
            chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "index": 0}]}
            error = {"error": {"code": 500, "message": echo, "status": "INTERNAL"}}
            await resp.write(b"data: " + orjson.dumps(chunk) + b"\r\n\r\n")
            await resp.write(b"data: " + orjson.dumps(error) + b"\r\n\r\n")
        else:
            choice = {"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "finish_reason": None}
            chunk = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [choice],
            }
            error = {"error": {"message": echo, "type": "server_error", "param": None, "code": None}}
            await resp.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
            await resp.write(b"data: " + orjson.dumps(error) + b"\n\n")
        await resp.write_eof()
        return resp


def _error(protocol: str, status: int, echo: str) -> dict[str, Any]:
    """The error body each vendor sends, with `echo` where its message goes."""
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": echo}}
    if protocol == "gemini":
        return {"error": {"code": status, "message": echo, "status": "INVALID_ARGUMENT"}}
    if protocol == "suno":
        return {"code": "bad_request", "message": echo, "data": None}
    if protocol in ("fish", "picwish"):
        return {"status": status, "message": echo}
    if protocol == "stability":
        return {"id": "e1", "name": "bad_request", "errors": [echo]}
    if protocol == "kling":
        return {"code": 1201, "message": echo, "request_id": "r1"}
    if protocol == "vidu":
        return {"code": status, "reason": "BadRequest", "message": echo, "metadata": {}}
    return {"error": {"message": echo, "type": "invalid_request_error", "param": None, "code": "bad_request"}}
