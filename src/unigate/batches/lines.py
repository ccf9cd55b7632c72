"""One batch line, run exactly as the same direct call would be: its endpoint's own handler
(parsing, routing, fallback, translation, limits, budget, usage) with a request made in process
and a capture in place of the client. The edge's error answer (`GatewayApp.error_answer`) turns a
refusal into the body the client would have read, so a line's result is the direct call's answer.

Whether a failed answer is worth another attempt is decided here too (`retry_after`): the
gateway's own rate limit and an upstream's 429, 5xx or unreachable host are; a spent budget,
a refused body, anything else 4xx is the line's final answer.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from unigate.api.serving.serve import BATCH
from unigate.auth.principal import Principal
from unigate.edge.asgi import Message, Request
from unigate.edge.endpoint_table import EndpointTable
from unigate.edge.endpoints import Endpoint
from unigate.errors import BudgetExceeded, GatewayError, RateLimited, StorageQuotaExceeded

log = logging.getLogger("unigate.batches")

# The edge's own answer to an error (`GatewayApp.error_answer`): its status and body.
Render = Callable[[Request, GatewayError, Endpoint | None], tuple[int, bytes]]
_FINAL_429 = (BudgetExceeded, StorageQuotaExceeded)  # money and storage do not come back by waiting


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: bytes
    request_id: str
    retry_after: float | None  # None: final; else the seconds the answer asks to wait (0: no hint)
    limited: bool = False  # refused by the gateway's own rate limit (the key's or the model's)


class _Capture:
    """The client of a line's call: hands the body over once, never disconnects, keeps the
    response."""

    def __init__(self, body: bytes) -> None:
        self.body: bytes | None = body
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self._never = asyncio.Event()

    async def receive(self) -> Message:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self._never.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))


class LineCaller:
    def __init__(self, table: Callable[[], EndpointTable], render: Render) -> None:
        self.table = table  # the app's endpoint table, read when the first line runs
        self.render = render

    async def call(self, principal: Principal, batch_id: str, url: str, body: dict[str, Any]) -> Answer:
        """Run one line's request for `principal`, tagged with `batch_id` for its usage."""
        request_id = "batch_req_" + secrets.token_hex(12)
        raw = orjson.dumps(body)
        capture = _Capture(raw)
        scope = {
            "type": "http",
            "method": "POST",
            "path": url,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())],
            "query_string": b"",
            BATCH: batch_id,
        }
        request = Request(scope, capture.receive, capture.send, request_id)
        endpoint, params, _ = self.table().match("POST", url)
        try:
            if endpoint is None or endpoint.auth != "key":
                raise GatewayError(f"No batch endpoint at POST {url}.", status=404, code="unknown_url")
            request.params = params
            await endpoint.key_handler(request, principal)
        except GatewayError as err:
            status, rendered = self.render(request, err, endpoint)
            return Answer(status, rendered, request_id, _retry(err), isinstance(err, RateLimited))
        except Exception:
            log.exception("batch %s: a line failed in the gateway (request %s)", batch_id, request_id)
            status, rendered = self.render(request, GatewayError("Internal server error."), endpoint)
            return Answer(status, rendered, request_id, 0.0)
        status = capture.status or 500
        retry = 0.0 if status >= 500 or status == 429 else None
        return Answer(status, b"".join(capture.chunks), request_id, retry)


def _retry(err: GatewayError) -> float | None:
    if isinstance(err, _FINAL_429):
        return None
    if isinstance(err, RateLimited) or err.status == 429 or err.status >= 500:
        try:
            return float(err.headers.get("retry-after", "0"))
        except ValueError:
            return 0.0
    return None
