"""OpenAI's Batch API on the engine: the input file checked line by line before anything
runs (every bad line named, as OpenAI's `errors.data`), the result files in OpenAI's JSONL
shape, and the Batch object.

A bad input fails the whole batch; nothing of it runs or is charged. Output lines are the
calls that answered 2xx; the error file holds the others (`response` with the status and error
body the direct call would have had) and the lines that never ran (`error`, `response` null).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson

from unigate.auth.principal import Principal
from unigate.batches.kinds import Refused
from unigate.batches.store import BatchRow, BatchStore, DoneLine, NewLine
from unigate.errors import GatewayError
from unigate.files.service import FileService
from unigate.routing.catalog import Catalog

_MAX_ERRORS = 1000  # errors.data stays readable for a file that is wrong everywhere
_NOT_RUN = {
    "canceled": ("batch_cancelled", "The batch was cancelled before this request ran."),
    "expired": ("batch_expired", "The batch expired before this request ran."),
}


def _bad(line: int, code: str, message: str, param: str | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "param": param, "line": line}


class OpenAIBatches:
    def __init__(self, store: BatchStore, files: FileService, catalog: Any, max_lines: int) -> None:
        self.store = store
        self.files = files
        self.catalog = catalog  # a callable giving the current catalog (config reloads swap it)
        self.max_lines = max_lines

    # -- BatchKind -------------------------------------------------------------------------

    async def prepare(self, row: BatchRow, principal: Principal) -> list[NewLine]:
        files = self.files
        try:
            found = await files.get(row.key_id, row.input_file_id)
        except GatewayError as err:
            raise Refused([_bad(0, "invalid_file", err.message, "input_file_id")]) from None
        lines: list[NewLine] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        number = 0
        async for raw in files.lines(found):
            number += 1
            if not raw.strip():
                continue
            if len(lines) >= self.max_lines:
                errors.append(
                    _bad(number, "too_many_requests", f"A batch holds at most {self.max_lines} lines.")
                )
                break
            checked = self._line(number, raw, row.endpoint, principal, seen)
            if isinstance(checked, NewLine):
                lines.append(checked)
            elif len(errors) < _MAX_ERRORS:
                errors.append(checked)
        if not lines and not errors:
            errors.append(_bad(1, "empty_file", "The input file has no requests.", "input_file_id"))
        if errors:
            raise Refused(errors)
        return lines

    def _line(
        self, number: int, raw: bytes, endpoint: str, principal: Principal, seen: set[str]
    ) -> NewLine | dict[str, Any]:
        try:
            item = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return _bad(number, "invalid_json_line", "This line is not valid JSON.")
        if not isinstance(item, dict):
            return _bad(number, "invalid_json_line", "This line is not a JSON object.")
        custom_id = item.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            return _bad(
                number, "missing_required_parameter", "Each request needs a custom_id string.", "custom_id"
            )
        if custom_id in seen:
            return _bad(
                number, "duplicate_custom_id", f"The custom_id {custom_id!r} is used twice.", "custom_id"
            )
        seen.add(custom_id)
        if item.get("method") != "POST":
            return _bad(number, "invalid_method", "The method must be POST.", "method")
        if item.get("url") != endpoint:
            return _bad(
                number, "mismatched_endpoint", f"The url must be the batch's endpoint, {endpoint}.", "url"
            )
        body = item.get("body")
        if not isinstance(body, dict):
            return _bad(number, "invalid_request", "The body must be a JSON object.", "body")
        model = body.get("model")
        if endpoint == "/v1/moderations" and model is None:
            model = "omni-moderation-latest"
        if not isinstance(model, str) or not model:
            return _bad(number, "missing_required_parameter", "The body needs a model.", "body.model")
        if body.get("stream") is True:
            return _bad(number, "invalid_request", "Batch requests cannot stream.", "body.stream")
        if body.get("background") is True:  # a batch line is already run in the background
            return _bad(
                number, "invalid_request", "Batch requests cannot be background responses.", "body.background"
            )
        catalog: Catalog = self.catalog()
        if catalog.resolve(model) is None:
            return _bad(number, "model_not_found", f"The model '{model}' does not exist.", "body.model")
        if not principal.may_use_model(model):
            return _bad(
                number, "model_not_allowed", f"This API key may not use the model '{model}'.", "body.model"
            )
        return NewLine(custom_id, body)

    async def finalize(self, row: BatchRow) -> dict[str, Any]:
        files = self.files
        values: dict[str, Any] = {}
        if row.succeeded:
            made = await files.create(
                row.key_id, "batch_output", f"{row.id}_output.jsonl", self._results(row, ok=True)
            )
            values["output_file_id"] = made.id
        if row.errored or row.canceled or row.expired:
            made = await files.create(
                row.key_id, "batch_output", f"{row.id}_error.jsonl", self._results(row, ok=False)
            )
            values["error_file_id"] = made.id
        return values

    async def _results(self, row: BatchRow, ok: bool) -> AsyncIterator[bytes]:
        out: list[bytes] = []
        async for line in self.store.done(row.id):
            if (line.state == "succeeded") == ok:
                out.append(result_line(row.id, line) + b"\n")
            if len(out) >= 200:
                yield b"".join(out)
                out = []
        if out:
            yield b"".join(out)


def result_line(batch_id: str, line: DoneLine) -> bytes:
    """One line of an output or error file, as OpenAI writes it."""
    not_run = _NOT_RUN.get(line.state)
    if not_run is not None or not line.result:
        code, message = not_run or ("server_error", "The request has no result.")
        rid = f"batch_req_{batch_id[-12:]}_{line.idx}"
        return orjson.dumps({"id": rid, "custom_id": line.custom_id, "response": None,
                             "error": {"code": code, "message": message}})  # fmt: skip
    response = orjson.Fragment(line.result)
    return orjson.dumps(
        {
            "id": line.request_id,
            "custom_id": line.custom_id,
            "response": {"status_code": line.status_code, "request_id": line.request_id, "body": response},
            "error": None,
        }
    )


_ENDED_AT = {
    "completed": "completed_at",
    "failed": "failed_at",
    "expired": "expired_at",
    "cancelled": "cancelled_at",
}


def batch_object(row: BatchRow) -> dict[str, Any]:
    """The Batch object (`openai.types.Batch`)."""

    def at(value: float | None) -> int | None:
        return None if value is None else int(value)

    body: dict[str, Any] = {
        "id": row.id,
        "object": "batch",
        "endpoint": row.endpoint,
        "errors": None if not row.errors else {"object": "list", "data": row.errors},
        "input_file_id": row.input_file_id,
        "completion_window": "24h",
        "status": row.status,
        "output_file_id": row.output_file_id or None,
        "error_file_id": row.error_file_id or None,
        "created_at": int(row.created_at),
        "in_progress_at": at(row.in_progress_at),
        "expires_at": int(row.expires_at),
        "finalizing_at": at(row.finalizing_at),
        "completed_at": None,
        "failed_at": None,
        "expired_at": None,
        "cancelling_at": at(row.cancelling_at),
        "cancelled_at": None,
        "request_counts": {
            "total": row.total,
            "completed": row.succeeded,
            "failed": row.errored + row.canceled + row.expired,
        },
        "metadata": row.metadata,
    }
    ended = _ENDED_AT.get(row.status)
    if ended is not None:
        body[ended] = at(row.ended_at)
    return body


def expires(now: float | None = None) -> float:
    return (now or time.time()) + 24 * 3600
