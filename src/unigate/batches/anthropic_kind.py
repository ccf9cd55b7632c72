"""Anthropic's Message Batches on the engine: the requests come inline with the create call
(checked there, each `params` against the Messages declaration, so a bad batch is a 400 that
names the request and field), the MessageBatch object, and the results as Anthropic writes
them (`succeeded` with the message, `errored` with the error body, `canceled`, `expired`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import orjson

from unigate.auth.principal import Principal
from unigate.batches.store import BatchRow, BatchStore, NewLine
from unigate.errors import InvalidRequest, PermissionDenied
from unigate.routing.catalog import Catalog
from unigate.shapes.batches import MESSAGE_BATCH

ENDPOINT = "/v1/messages"
_PROCESSING = {"cancelling": "canceling", "completed": "ended", "failed": "ended", "expired": "ended",
               "cancelled": "ended"}  # fmt: skip


def _when(value: float | None) -> str | None:
    if value is None:
        return None
    return dt.datetime.fromtimestamp(value, dt.UTC).isoformat().replace("+00:00", "Z")


def check_requests(
    payload: dict[str, Any], principal: Principal, catalog: Catalog, max_lines: int
) -> list[NewLine]:
    """The create body's `requests`; 400 naming the first bad one (`requests[3].params.model`)."""
    requests = MESSAGE_BATCH.check(payload).requests
    if len(requests) > max_lines:
        raise InvalidRequest(f"requests: a batch holds at most {max_lines} requests.", param="requests")
    lines: list[NewLine] = []
    seen: set[str] = set()
    for i, item in enumerate(requests):
        where = f"requests[{i}]"
        custom_id, checked = item.custom_id, item.params
        if custom_id in seen:
            raise InvalidRequest(
                f"{where}.custom_id: '{custom_id}' is used twice.", param=f"{where}.custom_id"
            )
        seen.add(custom_id)
        if checked.stream:
            raise InvalidRequest(
                f"{where}.params.stream: batch requests cannot stream.", param=f"{where}.params.stream"
            )
        if catalog.resolve(checked.model) is None:
            raise InvalidRequest(
                f"{where}.params.model: the model '{checked.model}' does not exist.",
                param=f"{where}.params.model",
            )
        if not principal.may_use_model(checked.model):
            raise PermissionDenied(
                f"This API key may not use the model '{checked.model}'.", code="model_not_allowed"
            )
        params = payload["requests"][i]["params"]  # the client's own object, as a direct call sends it
        lines.append(NewLine(custom_id, params))
    return lines


def batch_object(row: BatchRow, base: str) -> dict[str, Any]:
    """The MessageBatch object (`anthropic.types.messages.MessageBatch`)."""
    processing = _PROCESSING.get(row.status, "in_progress")
    ended = processing == "ended"
    return {
        "id": row.id,
        "type": "message_batch",
        "processing_status": processing,
        "request_counts": {
            "processing": 0 if ended else row.processing,
            "succeeded": row.succeeded,
            "errored": row.errored,
            "canceled": row.canceled,
            "expired": row.expired,
        },
        "ended_at": _when(row.ended_at),
        "created_at": _when(row.created_at),
        "expires_at": _when(row.expires_at),
        "archived_at": None,
        "cancel_initiated_at": _when(row.cancelling_at),
        "results_url": f"{base}/v1/messages/batches/{row.id}/results" if ended else None,
    }


async def results(store: BatchStore, row: BatchRow) -> AsyncIterator[bytes]:
    """The results file, one JSON line per request in input order, in chunks."""
    out: list[bytes] = []
    async for line in store.done(row.id):
        result: dict[str, Any]
        if line.state == "succeeded":
            result = {"type": "succeeded", "message": orjson.Fragment(line.result)}
        elif line.state == "errored":
            result = {"type": "errored", "error": orjson.Fragment(line.result or b"null")}
        else:
            result = {"type": line.state}  # canceled, expired
        out.append(orjson.dumps({"custom_id": line.custom_id, "result": result}) + b"\n")
        if len(out) >= 200:
            yield b"".join(out)
            out = []
    if out:
        yield b"".join(out)


class AnthropicBatches:
    """The engine's hooks: the lines were stored at create, and results are read from them."""

    async def prepare(self, row: BatchRow, principal: Principal) -> list[NewLine]:
        raise AssertionError("Anthropic batches are created with their lines")

    async def finalize(self, row: BatchRow) -> dict[str, Any]:
        return {}
