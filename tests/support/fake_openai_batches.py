"""A fake OpenAI Batch API (files + batches) on 127.0.0.1, in OpenAI's wire format. The
gateway's `base_url` for it is `base_url` = http://127.0.0.1:<port>/v1, as for OpenAI (Azure's
v1 surface serves the same calls: set `auth_header="api-key"`).

Auth: `Authorization: Bearer <api_key>` (or `api-key: <api_key>`); a missing or wrong key is
HTTP 401 `invalid_api_key`, whose message quotes the key sent, as a careless upstream might.

  POST /v1/files            multipart: `purpose` (must be `batch`), `file` -> a File object
  GET  /v1/files/{id}/content   the file's bytes (the input, or a batch's output/error JSONL)
  DELETE /v1/files/{id}     {"id", "object": "file", "deleted": true}
  POST /v1/batches          JSON {input_file_id, endpoint, completion_window "24h", metadata}:
                            the input file must exist with purpose batch and every line be
                            {custom_id (unique), method POST, url == endpoint, body} -> a Batch
  GET  /v1/batches/{id}     the Batch: `validating` for the first tenth of `run_seconds`, then
                            `in_progress`, then `completed` (or `expired` when a line is
                            scripted to expire), with request_counts and the output/error files
  POST /v1/batches/{id}/cancel   `cancelling`, then `cancelled` at the next retrieve: lines
                            not yet run get `batch_cancelled`
  GET  /v1/batches?limit=&after=   the batches newest first, each with the `metadata` it was
                            created with: `{"object": "list", "data", "first_id", "last_id",
                            "has_more"}`, `limit` 1-100 (default 20), `after` the id to go on from

Per-line outcomes (`outcomes`, by custom_id; default success): `success` (200 and a body of
the endpoint's kind with usage: prompt_tokens 10 + line number, completion_tokens 5), `error`
(400 invalid_request_error in the error file), `error_quoting_key` (the same, its message
quoting the key, as a careless upstream might), `expired` (`batch_expired` in the error file).
`fail` answers a route (files, content, delete, batches, retrieve, cancel) with an HTTP status
instead, `stall` only after that many seconds; `status` forces what every retrieve reports.
Everything received is in `received`.

`lost_answer` (routes) creates what the call asks for, then drops the connection without an
answer, as a process or network dying mid-call would leave it; `hold` (route -> seconds) creates
it, then waits that long before answering (time for a test to kill the caller).

Not modelled: file expiry, listing files, batch limits (50,000 lines, 200 MB), per-model
queues and the `usage` summary newer batches carry.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.net import free_port

ENDPOINTS = ("/v1/chat/completions", "/v1/embeddings", "/v1/completions", "/v1/responses")
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
CANCELLED_MESSAGE = "This request was not executed because the batch was cancelled."


@dataclass
class Received:
    """One request as the fake got it."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes
    form: dict[str, Any] = field(default_factory=dict)  # multipart: text values, files as bytes


@dataclass
class FakeBatch:
    id: str
    endpoint: str
    input_file_id: str
    metadata: dict[str, str]
    lines: list[dict[str, Any]]
    created: float
    cancelled: bool = False
    cancel_seen: bool = False  # a retrieve after the cancel reported `cancelling`
    output_file_id: str | None = None
    error_file_id: str | None = None


@dataclass
class FakeOpenAIBatches(LoopbackServer):
    api_key: str = "sk-fake-batches"
    auth_header: str = "authorization"  # or "api-key" (Azure)
    run_seconds: float = 0.3
    outcomes: dict[str, str] = field(default_factory=dict)
    fail: dict[str, int] = field(default_factory=dict)
    status: str | None = None
    stall: dict[str, float] = field(default_factory=dict)  # route -> seconds before answering
    lost_answer: set[str] = field(default_factory=set)  # routes answered by a dropped connection
    hold: dict[str, float] = field(default_factory=dict)  # route -> seconds between creating and answering
    received: list[Received] = field(default_factory=list)
    files: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)  # id -> purpose, name, bytes
    batches: dict[str, FakeBatch] = field(default_factory=dict)
    port: int = field(default_factory=free_port)

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{id}/content", self._content)
        app.router.add_delete("/v1/files/{id}", self._delete)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches", self._list)
        app.router.add_get("/v1/batches/{id}", self._retrieve)
        app.router.add_post("/v1/batches/{id}/cancel", self._cancel)

    def input_lines(self, batch_id: str) -> list[dict[str, Any]]:
        return self.batches[batch_id].lines

    # -- the routes --

    async def _upload(self, request: web.Request) -> web.Response:
        form: dict[str, Any] = {}
        for name, value in (await request.post()).items():
            if isinstance(value, web.FileField):
                form[name] = (value.filename, value.file.read())
            elif isinstance(value, str):
                form[name] = value
        record = self._record(request, b"", form)
        refused = await self._refused(request, "files")
        if refused is not None:
            return refused
        upload = form.get("file")
        if form.get("purpose") not in ("batch", "fine-tune", "assistants", "user_data"):
            return _error(400, "purpose: must be one of batch, fine-tune, assistants, user_data", "purpose")
        if not isinstance(upload, tuple):
            return _error(400, "file: a file part is required", "file")
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        self.files[file_id] = (form["purpose"], upload[0], upload[1])
        record.form["id"] = file_id
        return web.json_response(_file_object(file_id, *self.files[file_id]))

    async def _content(self, request: web.Request) -> web.Response:
        self._record(request, b"")
        refused = await self._refused(request, "content")
        if refused is not None:
            return refused
        found = self.files.get(request.match_info["id"])
        if found is None:
            return _error(
                404,
                f"No such File object: {request.match_info['id']}",
                "id",
                status_type="invalid_request_error",
            )
        return web.Response(body=found[2], content_type="application/octet-stream")

    async def _delete(self, request: web.Request) -> web.Response:
        self._record(request, b"")
        refused = await self._refused(request, "delete")
        if refused is not None:
            return refused
        file_id = request.match_info["id"]
        if self.files.pop(file_id, None) is None:
            return _error(404, f"No such File object: {file_id}", "id")
        return web.json_response({"id": file_id, "object": "file", "deleted": True})

    async def _create(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self._record(request, raw)
        refused = await self._refused(request, "batches")
        if refused is not None:
            return refused
        body = orjson.loads(raw)
        endpoint = body.get("endpoint")
        if endpoint not in ENDPOINTS:
            return _error(400, f"endpoint: must be one of {', '.join(ENDPOINTS)}", "endpoint")
        if body.get("completion_window") != "24h":
            return _error(400, "completion_window: only 24h is supported", "completion_window")
        found = self.files.get(str(body.get("input_file_id")))
        if found is None or found[0] != "batch":
            return _error(400, "input_file_id: no batch file with that id", "input_file_id")
        lines = [orjson.loads(line) for line in found[2].splitlines() if line.strip()]
        ids = [line.get("custom_id") for line in lines]
        if len(set(ids)) != len(ids) or not all(isinstance(i, str) for i in ids):
            return _error(400, "The batch input file has missing or duplicate custom_id values.", None)
        if any(line.get("method") != "POST" or line.get("url") != endpoint for line in lines):
            return _error(400, "Every line's url must match the batch endpoint.", None)
        batch = FakeBatch(
            f"batch_{uuid.uuid4().hex[:24]}",
            endpoint,
            body["input_file_id"],
            body.get("metadata") or {},
            lines,
            time.time(),
        )
        self.batches[batch.id] = batch
        await asyncio.sleep(self.hold.get("batches", 0.0))
        if "batches" in self.lost_answer:
            assert request.transport is not None
            request.transport.close()  # created, but the caller never hears of it
        return web.json_response(self._batch_object(batch))

    async def _list(self, request: web.Request) -> web.Response:
        self._record(request, b"")
        refused = await self._refused(request, "list")
        if refused is not None:
            return refused
        try:
            limit = int(request.query.get("limit", "20"))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 100:
            return _error(400, "limit: must be an integer from 1 to 100", "limit")
        # Insertion order is creation order: newest first is the reverse.
        newest = list(reversed(self.batches.values()))
        after = request.query.get("after")
        if after is not None:
            ids = [b.id for b in newest]
            if after not in ids:
                return _error(404, f"No batch found with id '{after}'.", "after")
            newest = newest[ids.index(after) + 1 :]
        page = [self._batch_object(b) for b in newest[:limit]]
        return web.json_response(
            {
                "object": "list",
                "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": len(newest) > limit,
            }
        )

    async def _retrieve(self, request: web.Request) -> web.Response:
        self._record(request, b"")
        refused = await self._refused(request, "retrieve")
        if refused is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, f"No batch found with id '{request.match_info['id']}'.", None)
        answer = self._batch_object(batch)
        batch.cancel_seen = batch.cancelled
        return web.json_response(answer)

    async def _cancel(self, request: web.Request) -> web.Response:
        self._record(request, b"")
        refused = await self._refused(request, "cancel")
        if refused is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, f"No batch found with id '{request.match_info['id']}'.", None)
        if self._stage(batch) in ("completed", "expired", "cancelled"):
            return _error(409, f"Cannot cancel a batch with status '{self._stage(batch)}'.", None)
        batch.cancelled = True
        return web.json_response(self._batch_object(batch))

    # -- state --

    def _record(self, request: web.Request, body: bytes, form: dict[str, Any] | None = None) -> Received:
        headers = {k.lower(): v for k, v in request.headers.items()}
        record = Received(request.method, request.path_qs, headers, body, dict(form or {}))
        self.received.append(record)
        return record

    async def _refused(self, request: web.Request, route: str) -> web.Response | None:
        await asyncio.sleep(self.stall.get(route, 0.0))
        sent = request.headers.get(self.auth_header, "")
        key = sent.removeprefix("Bearer ") if self.auth_header == "authorization" else sent
        if key != self.api_key:
            message = f"Incorrect API key provided: {key}. You can find your API key at your account page."
            return _error(401, message, None, code="invalid_api_key")
        status = self.fail.get(route)
        if status is None:
            return None
        if status >= 500:
            return _error(
                status, "The server had an error while processing your request.", None, "server_error"
            )
        return _error(status, f"Scripted failure of {route}.", None)

    def _stage(self, batch: FakeBatch) -> str:
        if self.status is not None:
            return self.status
        elapsed = time.time() - batch.created
        if batch.cancelled:
            return "cancelled" if batch.cancel_seen else "cancelling"
        if elapsed < self.run_seconds / 10:
            return "validating"
        if elapsed < self.run_seconds:
            return "in_progress"
        expired = any(self.outcomes.get(line["custom_id"]) == "expired" for line in batch.lines)
        return "expired" if expired else "completed"

    def _batch_object(self, batch: FakeBatch) -> dict[str, Any]:
        stage = self._stage(batch)
        done = stage in ("completed", "expired", "cancelled")
        if done and batch.output_file_id is None and batch.error_file_id is None:
            self._write_results(batch, stage)
        outcomes = [self._outcome(batch, line, stage) for line in batch.lines]
        created = int(batch.created)
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": {
                "object": "list",
                "data": [
                    {"code": "invalid_file", "message": "Scripted failure.", "param": None, "line": None}
                ],
            }
            if stage == "failed"
            else None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": stage,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": created,
            "in_progress_at": created if stage != "validating" else None,
            "expires_at": created + 86400,
            "completed_at": created if stage == "completed" else None,
            "expired_at": created if stage == "expired" else None,
            "cancelling_at": created if batch.cancelled else None,
            "cancelled_at": created if stage == "cancelled" else None,
            "failed_at": created if stage == "failed" else None,
            "finalizing_at": None,
            "request_counts": {
                "total": len(batch.lines),
                "completed": outcomes.count("success") if done else 0,
                "failed": len(outcomes) - outcomes.count("success") if done else 0,
            },
            "metadata": batch.metadata,
        }

    def _outcome(self, batch: FakeBatch, line: dict[str, Any], stage: str) -> str:
        if stage == "cancelled" or batch.cancelled:
            return "cancelled"
        return self.outcomes.get(line["custom_id"], "success")

    def _write_results(self, batch: FakeBatch, stage: str) -> None:
        output, errors = [], []
        for number, line in enumerate(batch.lines):
            outcome = self._outcome(batch, line, stage)
            row: dict[str, Any] = {"id": f"batch_req_{uuid.uuid4().hex[:24]}", "custom_id": line["custom_id"]}
            if outcome == "success":
                body = _answer(batch.endpoint, line["body"], number)
                row |= {
                    "response": {"status_code": 200, "request_id": uuid.uuid4().hex, "body": body},
                    "error": None,
                }
                output.append(row)
            elif outcome == "error_quoting_key":
                message = f"Header Authorization: Bearer {self.api_key} is not allowed in a batch line."
                body = {
                    "error": {
                        "message": message,
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                }
                row |= {
                    "response": {"status_code": 400, "request_id": uuid.uuid4().hex, "body": body},
                    "error": None,
                }
                errors.append(row)
            elif outcome == "error":
                body = {
                    "error": {
                        "message": "Invalid value for 'temperature'.",
                        "type": "invalid_request_error",
                        "param": "temperature",
                        "code": "invalid_value",
                    }
                }
                row |= {
                    "response": {"status_code": 400, "request_id": uuid.uuid4().hex, "body": body},
                    "error": None,
                }
                errors.append(row)
            else:
                code, message = (
                    ("batch_expired", EXPIRED_MESSAGE)
                    if outcome == "expired"
                    else ("batch_cancelled", CANCELLED_MESSAGE)
                )
                row |= {"response": None, "error": {"code": code, "message": message}}
                errors.append(row)
        for rows, key in ((output, "output_file_id"), (errors, "error_file_id")):
            if rows:
                file_id = f"file-{uuid.uuid4().hex[:24]}"
                data = b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in rows)
                self.files[file_id] = ("batch_output", f"{batch.id}_{key}.jsonl", data)
                setattr(batch, key, file_id)


def _answer(endpoint: str, body: dict[str, Any], number: int) -> dict[str, Any]:
    """A successful answer of the endpoint's kind, with usage in that endpoint's words."""
    model = body.get("model", "")
    prompt = 10 + number
    if endpoint == "/v1/embeddings":
        return {
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
            "model": model,
            "usage": {"prompt_tokens": prompt, "total_tokens": prompt},
        }
    if endpoint == "/v1/responses":
        return {
            "id": f"resp_{number}",
            "object": "response",
            "status": "completed",
            "model": model,
            "output": [],
            "usage": {"input_tokens": prompt, "output_tokens": 5, "total_tokens": prompt + 5},
        }
    usage = {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}
    if endpoint == "/v1/completions":
        return {
            "id": f"cmpl-{number}",
            "object": "text_completion",
            "model": model,
            "choices": [{"index": 0, "text": "ok", "finish_reason": "stop", "logprobs": None}],
            "usage": usage,
        }
    message = {"role": "assistant", "content": f"Answer {number}", "refusal": None}
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": usage,
    }


def _file_object(file_id: str, purpose: str, filename: str, data: bytes) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(data),
        "created_at": int(time.time()),
        "filename": filename,
        "purpose": purpose,
        "status": "processed",
        "status_details": None,
    }


def _error(
    status: int, message: str, param: str | None, code: str | None = None, status_type: str = ""
) -> web.Response:
    kind = status_type or ("server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return web.json_response(body, status=status)
