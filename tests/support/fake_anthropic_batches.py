"""A fake Anthropic Message Batches API on 127.0.0.1, in Anthropic's wire format. The gateway's
`base_url` for it is `base_url` = http://127.0.0.1:<port>, as for Anthropic.

Auth: `x-api-key: <api_key>` (or `Authorization: Bearer <api_key>`, as newer SDKs send it) and
an `anthropic-version` header; a wrong key is HTTP 401
`authentication_error` (its message quotes the key sent, as a careless upstream might), a
missing version 400.

  POST /v1/messages/batches        JSON {"requests": [{custom_id (unique), params: a Messages
                                   request with model, max_tokens, messages}]} -> a MessageBatch
  GET  /v1/messages/batches/{id}   the MessageBatch: `in_progress` (every request counted as
                                   `processing`) for `run_seconds`, then `ended` with the counts
                                   by outcome and `results_url`
  POST /v1/messages/batches/{id}/cancel   `canceling` (cancel_initiated_at set), then `ended`
                                   at the next retrieve: requests not yet run are `canceled`
  GET  /v1/messages/batches/{id}/results   JSONL, one line per request, once ended (before:
                                   400 invalid_request_error)

Per-request outcomes (`outcomes`, by custom_id; default success): `success` (a Message with
usage input_tokens 20 + request number, output_tokens 7), `error` (errored:
invalid_request_error), `error_quoting_key` (the same, its message quoting the key, as a
careless upstream might), `expired`, `canceled`; `text` is what succeeded messages say.
`fail` answers a route (create, retrieve, cancel, results) with an HTTP status instead;
`results_host` puts `results_url` on another origin (the adapter must not follow it).
Everything received is in `received`.

Not modelled: list and delete, archived batches, batch limits (100,000 requests, 256 MB).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from tests.support.fake_openai_batches import Received
from tests.support.loopback import LoopbackServer
from tests.support.net import free_port

# The request_counts name of each scripted outcome.
_COUNTED = {"success": "succeeded", "error": "errored", "error_quoting_key": "errored"}


@dataclass
class AnthropicBatch:
    id: str
    requests: list[dict[str, Any]]
    created: float
    cancelled: bool = False
    cancel_seen: bool = False


@dataclass
class FakeAnthropicBatches(LoopbackServer):
    api_key: str = "sk-ant-fake-batches"
    run_seconds: float = 0.3
    outcomes: dict[str, str] = field(default_factory=dict)
    fail: dict[str, int] = field(default_factory=dict)
    results_host: str | None = None
    text: str = "Answer"  # what a succeeded message says (then its request number)
    received: list[Received] = field(default_factory=list)
    batches: dict[str, AnthropicBatch] = field(default_factory=dict)
    port: int = field(default_factory=free_port)

    @property
    def base_url(self) -> str:
        return self.origin

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages/batches", self._create)
        app.router.add_get("/v1/messages/batches/{id}", self._retrieve)
        app.router.add_post("/v1/messages/batches/{id}/cancel", self._cancel)
        app.router.add_get("/v1/messages/batches/{id}/results", self._results)

    async def _create(self, request: web.Request) -> web.Response:
        raw = await request.read()
        refused = self._refused(request, raw, "create")
        if refused is not None:
            return refused
        requests = orjson.loads(raw).get("requests")
        if not isinstance(requests, list) or not requests:
            return _error(400, "requests: at least one request is required")
        ids = [r.get("custom_id") for r in requests]
        if len(set(ids)) != len(ids) or not all(isinstance(i, str) for i in ids):
            return _error(400, "requests: custom_id values must be unique strings")
        for r in requests:
            params = r.get("params") or {}
            if not all(k in params for k in ("model", "max_tokens", "messages")):
                return _error(
                    400, f"requests.{r['custom_id']}.params: model, max_tokens and messages are required"
                )
        batch = AnthropicBatch(f"msgbatch_{uuid.uuid4().hex[:24]}", requests, time.time())
        self.batches[batch.id] = batch
        return web.json_response(self._batch_object(batch))

    async def _retrieve(self, request: web.Request) -> web.Response:
        batch, refused = self._batch(request, "retrieve")
        if batch is None:
            return refused
        answer = self._batch_object(batch)
        batch.cancel_seen = batch.cancelled
        return web.json_response(answer)

    async def _cancel(self, request: web.Request) -> web.Response:
        batch, refused = self._batch(request, "cancel")
        if batch is None:
            return refused
        if self._status(batch) == "ended":
            return _error(400, f"Batch {batch.id} has already ended and cannot be canceled.")
        batch.cancelled = True
        return web.json_response(self._batch_object(batch))

    async def _results(self, request: web.Request) -> web.Response:
        batch, refused = self._batch(request, "results")
        if batch is None:
            return refused
        if self._status(batch) != "ended":
            return _error(400, f"Batch {batch.id} has not ended; its results are not available yet.")
        lines = [self._line(batch, number, r) for number, r in enumerate(batch.requests)]
        body = b"".join(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE) for line in lines)
        return web.Response(body=body, content_type="application/binary")

    # -- state --

    def _refused(self, request: web.Request, raw: bytes, route: str) -> web.Response | None:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.received.append(Received(request.method, request.path_qs, headers, raw))
        # The gateway sends `x-api-key`; newer Anthropic SDKs send the key as a Bearer token.
        sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if sent != self.api_key:
            return _error(401, f"invalid x-api-key: {sent}", "authentication_error")
        if "anthropic-version" not in headers:
            return _error(400, "anthropic-version: header is required")
        status = self.fail.get(route)
        if status is None:
            return None
        kind = "api_error" if status >= 500 else "invalid_request_error"
        return _error(status, f"Scripted failure of {route}.", kind)

    def _batch(self, request: web.Request, route: str) -> tuple[AnthropicBatch | None, web.Response]:
        refused = self._refused(request, b"", route)
        if refused is not None:
            return None, refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return None, _error(404, f"Batch {request.match_info['id']} not found.", "not_found_error")
        return batch, web.Response()

    def _status(self, batch: AnthropicBatch) -> str:
        if batch.cancelled:
            return "ended" if batch.cancel_seen else "canceling"
        return "ended" if time.time() - batch.created >= self.run_seconds else "in_progress"

    def _outcome(self, batch: AnthropicBatch, request: dict[str, Any]) -> str:
        return "canceled" if batch.cancelled else self.outcomes.get(request["custom_id"], "success")

    def _batch_object(self, batch: AnthropicBatch) -> dict[str, Any]:
        status = self._status(batch)
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        for r in batch.requests:
            outcome = self._outcome(batch, r) if status == "ended" else "processing"
            counts[_COUNTED.get(outcome, outcome)] += 1
        origin = self.results_host or self.base_url
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": counts,
            "ended_at": _stamp(time.time()) if status == "ended" else None,
            "created_at": _stamp(batch.created),
            "expires_at": _stamp(batch.created + 86400),
            "archived_at": None,
            "cancel_initiated_at": _stamp(batch.created) if batch.cancelled else None,
            "results_url": f"{origin}/v1/messages/batches/{batch.id}/results" if status == "ended" else None,
        }

    def _line(self, batch: AnthropicBatch, number: int, request: dict[str, Any]) -> dict[str, Any]:
        outcome = self._outcome(batch, request)
        result: dict[str, Any] = {"type": outcome}
        if outcome == "success":
            params = request["params"]
            usage = {
                "input_tokens": 20 + number,
                "output_tokens": 7,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            }
            message = {
                "id": f"msg_{number}",
                "type": "message",
                "role": "assistant",
                "model": params["model"],
                "content": [{"type": "text", "text": f"{self.text} {number}"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": usage,
            }
            result = {"type": "succeeded", "message": message}
        elif outcome == "error":
            error = {"type": "invalid_request_error", "message": "max_tokens: must be at most 8192"}
            result = {"type": "errored", "error": {"type": "error", "error": error}}
        elif outcome == "error_quoting_key":
            error = {
                "type": "invalid_request_error",
                "message": f"x-api-key {self.api_key} is not allowed here",
            }
            result = {"type": "errored", "error": {"type": "error", "error": error}}
        return {"custom_id": request["custom_id"], "result": result}


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _error(status: int, message: str, kind: str = "invalid_request_error") -> web.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return web.json_response(body, status=status)
