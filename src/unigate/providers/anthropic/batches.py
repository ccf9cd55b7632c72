"""Anthropic's Message Batches API for `anthropic` providers configured `batches: native`
(`batches/native.py`'s `NativeBatches`).

Wire (paths under the provider's base URL, https://api.anthropic.com; `x-api-key` and
`anthropic-version` as on every Messages call, from the provider's pool):
- `POST /v1/messages/batches`, JSON `{"requests": [{"custom_id", "params": <a Messages
  request>}]}` -> a MessageBatch: `id`, `processing_status` in_progress | canceling | ended,
  `request_counts` {processing, succeeded, errored, canceled, expired}, `cancel_initiated_at`,
  `results_url` (once ended).
- `GET /v1/messages/batches/{id}` -> the MessageBatch.
- `POST /v1/messages/batches/{id}/cancel` -> the MessageBatch, `canceling`.
- `GET {results_url}` (`/v1/messages/batches/{id}/results`) -> JSONL, one line per request, in
  no particular order: `{"custom_id", "result": {"type": "succeeded", "message"} | {"type":
  "errored", "error": {"type": "error", "error": {"type", "message"}}} | {"type": "canceled"} |
  {"type": "expired"}}`.
Errors: `{"type": "error", "error": {"type", "message"}}`; statuses: the table's
(`upstream_status.py`).

A MessageBatch keeps no metadata (its fields are the id, statuses, counts and times above), and
its requests' `custom_id`s can be read only from the results of an ended batch: nothing tells a
batch this gateway submitted from another one of the account's. So `find` finds nothing, and a
process that dies between the submit and storing its id leaves a batch the next worker submits
again (at least once, not exactly once).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from typing import Any

import orjson

from unigate.batches.native import NativeLine, NativeResult, NativeState, NativeStatus
from unigate.providers.base import RouteFailed, Timeouts, Unsupported
from unigate.providers.batch_http import (
    BatchCalls,
    Spooled,
    count,
    json_call,
    jsonl_objects,
    line_custom_id,
    token_usage,
)
from unigate.providers.http import raise_for_answer
from unigate.providers.task_http import obj, path_id, text
from unigate.providers.translated import said
from unigate.transport.interfaces import StreamedBody

log = logging.getLogger("unigate.providers")

VENDOR = "Anthropic"
DISCOUNT = 0.5  # Anthropic's published batch price: half the synchronous one
BATCHES = "/v1/messages/batches"
# The HTTP status each of Anthropic's error types stands for (its errors page).
_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_NOT_RUN = {
    "canceled": "The request was canceled before it ran.",
    "expired": "The batch's 24 hours ran out before the request ran.",
}


class AnthropicBatches(BatchCalls):
    """The batch calls of one Anthropic provider, over its pool."""

    discount = DISCOUNT

    async def submit(self, endpoint: str, lines: Sequence[NativeLine], metadata: dict[str, str]) -> str:
        """`endpoint` is `/v1/messages`, the only one; Anthropic's batches take no metadata."""
        if endpoint != "/v1/messages":
            # Not this upstream's: the engine runs such lines itself.
            raise Unsupported(
                f"Anthropic batches run /v1/messages requests only, not {endpoint}.",
                code="unsupported_operation",
            )
        body = await asyncio.to_thread(Spooled, _requests(lines))
        try:
            batch = await self._call("POST", BATCHES, self.timeouts, body)
        finally:
            body.close()
        batch_id = text(batch, "id")
        if not batch_id:
            raise RouteFailed("The Anthropic upstream's batch has no id.")
        return batch_id

    async def find(self, metadata: dict[str, str], since: float) -> str | None:
        """Never anything: a MessageBatch carries no metadata to find it by (see above)."""
        return None

    async def poll(self, upstream_id: str) -> NativeState:
        return batch_state(await self._call("GET", f"{BATCHES}/{path_id(upstream_id)}", self.queries))

    async def results(self, upstream_id: str) -> AsyncIterator[NativeResult]:
        batch = await self._call("GET", f"{BATCHES}/{path_id(upstream_id)}", self.queries)
        url = text(batch, "results_url")
        if not url:
            status = text(batch, "processing_status") or "unknown"
            raise RouteFailed(f"The Anthropic batch {upstream_id} has no results yet (it is {status}).")
        resp = await self.http.get(self._results_path(upstream_id, url), self.timeouts, _BINARY)
        if resp.status >= 400:
            await raise_for_answer(resp, said, vendor=VENDOR)
        # Errored lines may quote what was sent: scrubbed like an error answer.
        what = f"Anthropic batch {upstream_id} results"
        async for line in jsonl_objects(resp, what, self.redactor, _succeeded):
            result = line_result(line, what)
            if result is not None:
                yield result

    async def _request_cancel(self, upstream_id: str) -> None:
        await self._call("POST", f"{BATCHES}/{path_id(upstream_id)}/cancel", self.queries)

    def _results_path(self, upstream_id: str, url: str) -> str:
        """`results_url` under the provider's base URL; any other host gets the documented
        path on the base URL instead: the provider's key is never sent elsewhere."""
        base = self.http.base_url.partition("?")[0].rstrip("/")
        if url.startswith(base + "/"):
            return url[len(base) :]
        return f"{BATCHES}/{path_id(upstream_id)}/results"

    def _call(
        self, method: str, path: str, timeouts: Timeouts, data: bytes | StreamedBody = b""
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        return json_call(self.http, method, path, timeouts, said, VENDOR, data)


_BINARY = {"Accept": "application/binary"}  # what Anthropic's SDK asks the results file as


def _succeeded(line: dict[str, Any]) -> bool:
    return text(obj(line, "result"), "type") == "succeeded"


def _requests(lines: Sequence[NativeLine]) -> Iterator[bytes]:
    """`{"requests": [...]}`, one request at a time."""
    yield b'{"requests":['
    for n, line in enumerate(lines):
        request = orjson.dumps({"custom_id": line.custom_id, "params": line.body})
        yield b"," + request if n else request
    yield b"]}"


def batch_state(batch: dict[str, Any]) -> NativeState:
    """A MessageBatch as the engine's state: `ended` after a cancel is `cancelled`."""
    counts = obj(batch, "request_counts")
    kinds = {k: count(counts.get(k)) for k in ("processing", "succeeded", "errored", "canceled", "expired")}
    status: NativeStatus = "running"
    if text(batch, "processing_status") == "ended":
        status = "cancelled" if batch.get("cancel_initiated_at") else "ended"
    return NativeState(
        status,
        total=sum(kinds.values()),
        succeeded=kinds["succeeded"],
        errored=kinds["errored"] + kinds["canceled"] + kinds["expired"],
    )


def line_result(line: dict[str, Any], what: str = "batch results") -> NativeResult | None:
    """One results line; None for a line without a `custom_id` (unmatchable)."""
    custom_id = line_custom_id(line, what)
    if custom_id is None:
        return None
    result = obj(line, "result")
    kind = text(result, "type")
    if kind == "succeeded":
        message = obj(result, "message")
        return NativeResult(custom_id, 200, message, None, token_usage(message))
    if kind in _NOT_RUN:
        error = {"type": kind, "message": _NOT_RUN[kind]}
        return NativeResult(
            custom_id, 0, None, error, token_usage(None), kind="canceled" if kind == "canceled" else "expired"
        )
    response = obj(result, "error")  # an ErrorResponse: {"type": "error", "error": {...}}
    err = obj(response, "error")
    error_type = text(err, "type") or "api_error"
    error = {
        "type": error_type,
        "message": text(err, "message") or f"The request failed ({kind or 'no result'}).",
    }
    return NativeResult(
        custom_id,
        _TYPE_STATUS.get(error_type, 500),
        response or None,
        error,
        token_usage(None),
        kind="errored",
    )
