"""OpenAI's Batch API for `openai` and `azure` providers configured `batches: native`
(`batches/native.py`'s `NativeBatches`).

Wire (paths under the provider's base URL: https://api.openai.com/v1, or Azure's v1 surface
https://{resource}.openai.azure.com/openai/v1, which serves the same calls; the provider's
credential header on each):
- `POST /files`, multipart/form-data: `purpose` = `batch` and `file` = the input, JSONL with one
  request per line `{"custom_id", "method": "POST", "url": <endpoint>, "body"}` -> a File
  object with `id`.
- `POST /batches`, JSON `{"input_file_id", "endpoint", "completion_window": "24h",
  "metadata"}` -> a Batch object with `id`. `endpoint` is the path of every line
  (`/v1/chat/completions`, `/v1/embeddings`, `/v1/completions`, `/v1/responses`, ...).
- `GET /batches/{id}` -> `status` validating | in_progress | finalizing | cancelling (still
  running), completed, cancelled, expired, failed (why in `errors.data[].message`);
  `request_counts` {total, completed, failed}; `output_file_id`, `error_file_id`.
- `GET /files/{id}/content` -> JSONL, one line per request: `{"id", "custom_id", "response":
  {"status_code", "request_id", "body"} | null, "error": {"code", "message"} | null}`. The
  output file has the lines that ran (2xx); the error file the lines refused (4xx/5xx
  `response`) and those that never ran (`error.code` batch_expired, batch_cancelled).
- `POST /batches/{id}/cancel` -> the Batch, `cancelling`.
- `GET /batches?limit=&after=` -> `{"data": [Batch, ...], "has_more", "last_id"}`, newest first;
  the next page is `after` = the last id. Each Batch keeps the `metadata` it was created with
  (up to 16 string pairs): `find` looks the gateway's batch id up there after a take-over.
Input files are uploaded without `expires_after`: OpenAI expires `batch` files after 30 days by
default, and the same call serves Azure, whose files API documents its expiry differently. An
input file whose batch was never created (a process that died between the two calls, or a
take-over that found nothing and uploaded again) is left to that expiry.
Errors: `{"error": {"message", "type", "param", "code"}}` (`openai/errors.py`); statuses: the
table's (`upstream_status.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from typing import Any

import orjson

from unigate.batches.native import NativeLine, NativeResult, NativeState, NativeStatus, ResultKind
from unigate.edge.multipart import Form, UploadedFile
from unigate.errors import GatewayError, UpstreamRejected
from unigate.providers.base import RouteFailed, Timeouts
from unigate.providers.batch_http import (
    BatchCalls,
    Spooled,
    count,
    json_call,
    jsonl_objects,
    line_custom_id,
    token_usage,
)
from unigate.providers.form_body import FormBody
from unigate.providers.http import UpstreamHTTP, raise_for_answer
from unigate.providers.openai import errors as openai_errors
from unigate.providers.redact import Redactor
from unigate.providers.task_http import obj, objects, path_id, text

log = logging.getLogger("unigate.providers")

DISCOUNT = 0.5  # OpenAI's and Azure's published batch price: half the synchronous one
# `find` reads at most this many pages of this many batches: the batches created since the
# submit began are all there unless the account creates thousands a minute.
FIND_PAGES, FIND_PAGE = 20, 100
CLOCK_SKEW = 600.0  # seconds the vendor's `created_at` may lag the gateway's clock by
_STATUSES: dict[str, NativeStatus] = {
    "completed": "ended",
    "cancelled": "cancelled",
    "expired": "expired",
    "failed": "failed",
}
# Lines that never ran, by the error code OpenAI writes for them.
_NOT_RUN: dict[str, ResultKind] = {"batch_expired": "expired", "batch_cancelled": "canceled"}


class OpenAIBatches(BatchCalls):
    """The batch calls of one OpenAI-protocol provider, over its pool."""

    discount = DISCOUNT

    def __init__(self, http: UpstreamHTTP, timeouts: Timeouts, redactor: Redactor, vendor: str) -> None:
        super().__init__(http, timeouts, redactor)
        self.vendor = vendor  # "OpenAI" or "Azure OpenAI", for error messages and logs

    async def submit(self, endpoint: str, lines: Sequence[NativeLine], metadata: dict[str, str]) -> str:
        file_id = await self._upload(endpoint, lines)
        body = orjson.dumps(
            {
                "input_file_id": file_id,
                "endpoint": endpoint,
                "completion_window": "24h",
                "metadata": metadata,
            }
        )
        try:
            batch = await self._call("POST", "/batches", self.queries, body)
        except (RouteFailed, UpstreamRejected) as exc:
            # Refused: nothing refers to the file, which would only count in the upstream's
            # storage. Unanswered (timeout, broken connection), a batch may exist that reads it.
            if isinstance(exc, UpstreamRejected) or exc.cause == "answer":
                await self._forget(file_id)
            raise
        batch_id = text(batch, "id")
        if not batch_id:
            raise RouteFailed(f"The {self.vendor} upstream's batch has no id.")
        return batch_id

    async def find(self, metadata: dict[str, str], since: float) -> str | None:
        """The newest batch whose `metadata` holds every pair of `metadata`, among those created
        from `since` (less the clock skew) on; pages are read newest first until one is older."""
        if not metadata:
            return None  # nothing to tell the batch by: every batch would match
        after = ""
        for _ in range(FIND_PAGES):
            query = f"/batches?limit={FIND_PAGE}" + (f"&after={path_id(after)}" if after else "")
            page = await self._call("GET", query, self.queries)
            batches = objects(page, "data")
            for batch in batches:
                kept = obj(batch, "metadata")
                if all(kept.get(k) == v for k, v in metadata.items()) and text(batch, "id"):
                    return text(batch, "id")
                created = batch.get("created_at")
                if type(created) is int and created < since - CLOCK_SKEW:
                    return None
            after = text(batches[-1], "id") if batches else ""
            if page.get("has_more") is not True or not after:
                return None
        log.warning(
            "%s: %d pages of batches read without reaching the submit's start; taken as not found",
            self.vendor, FIND_PAGES,
        )  # fmt: skip
        return None

    async def poll(self, upstream_id: str) -> NativeState:
        batch = await self._call("GET", f"/batches/{path_id(upstream_id)}", self.queries)
        return batch_state(batch)

    async def results(self, upstream_id: str) -> AsyncIterator[NativeResult]:
        batch = await self._call("GET", f"/batches/{path_id(upstream_id)}", self.queries)
        if batch_state(batch).status == "running":
            status = text(batch, "status") or "unknown"
            raise RouteFailed(f"The {self.vendor} batch {upstream_id} has no results yet (it is {status}).")
        for key in ("output_file_id", "error_file_id"):
            file_id = text(batch, key)
            if not file_id:
                continue
            resp = await self.http.get(f"/files/{path_id(file_id)}/content", self.timeouts)
            if resp.status >= 400:
                await raise_for_answer(resp, openai_errors.said, vendor=self.vendor)
            # Error lines may quote what was sent: scrubbed like any error answer.
            redactor = self.redactor if key == "error_file_id" else None
            what = f"{self.vendor} batch {upstream_id} {key.removesuffix('_id').replace('_', ' ')}"
            async for line in jsonl_objects(resp, what, redactor):
                result = line_result(line, what)
                if result is not None:
                    yield result

    async def _request_cancel(self, upstream_id: str) -> None:
        await self._call("POST", f"/batches/{path_id(upstream_id)}/cancel", self.queries)

    async def _upload(self, endpoint: str, lines: Sequence[NativeLine]) -> str:
        """The input file, spooled in a worker thread and streamed from there (batch_http.py)."""
        spool = await asyncio.to_thread(Spooled, _jsonl(endpoint, lines))
        try:
            upload = UploadedFile("file", "batch.jsonl", "application/octet-stream", spool.file, spool.length)
            form = FormBody(Form(parts=[("purpose", "batch"), ("file", upload)]))
            answer = await self._call("POST", "/files", self.timeouts, form)
        finally:
            spool.close()
        file_id = text(answer, "id")
        if not file_id:
            raise RouteFailed(f"The {self.vendor} upstream's uploaded file has no id.")
        return file_id

    async def _forget(self, file_id: str) -> None:
        try:
            resp = await self.http.delete(f"/files/{path_id(file_id)}", self.queries)
            resp.release()
        except (RouteFailed, GatewayError) as exc:
            log.warning(
                "%s: deleting the unused batch input file %s failed: %s", self.vendor, file_id, exc.message
            )

    def _call(
        self, method: str, path: str, timeouts: Timeouts, data: bytes | FormBody = b""
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        return json_call(self.http, method, path, timeouts, openai_errors.said, self.vendor, data)


def _jsonl(endpoint: str, lines: Sequence[NativeLine]) -> Iterator[bytes]:
    for line in lines:
        row = {"custom_id": line.custom_id, "method": "POST", "url": endpoint, "body": line.body}
        yield orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)


def batch_state(batch: dict[str, Any]) -> NativeState:
    """A Batch object as the engine's state: anything but an end is `running`."""
    counts = obj(batch, "request_counts")
    status = _STATUSES.get(text(batch, "status"), "running")
    error = None
    if status == "failed":
        reasons = [text(e, "message") for e in objects(obj(batch, "errors"), "data")]
        error = "; ".join(r for r in reasons if r) or "The upstream batch failed."
    return NativeState(
        status,
        total=count(counts.get("total")),
        succeeded=count(counts.get("completed")),
        errored=count(counts.get("failed")),
        error=error,
    )


def line_result(line: dict[str, Any], what: str = "batch result file") -> NativeResult | None:
    """One output or error file line; None for a line without a `custom_id` (unmatchable)."""
    custom_id = line_custom_id(line, what)
    if custom_id is None:
        return None
    response = line.get("response")
    status = response.get("status_code") if isinstance(response, dict) else None
    if isinstance(response, dict) and type(status) is int:
        body = response.get("body")
        body = body if isinstance(body, dict) else None
        if 200 <= status < 300:
            return NativeResult(custom_id, status, body, None, token_usage(body))
        err = obj(body, "error")
        error = {
            "code": text(err, "code") or text(err, "type") or "upstream_error",
            "message": text(err, "message"),
        }
        return NativeResult(custom_id, status, body, error, token_usage(body), kind="errored")
    err = obj(line, "error")
    code = text(err, "code") or "upstream_error"
    error = {"code": code, "message": text(err, "message")}
    return NativeResult(custom_id, 0, None, error, token_usage(None), kind=_NOT_RUN.get(code, "errored"))
