"""The OpenAI Responses API relayed to an upstream that serves it (`responses: native` on an
`openai` or `azure` provider): the `openai` adapter's native format `openai-responses`.

Wire (paths under the provider's base URL, e.g. https://api.openai.com/v1; for Azure the
resource's `/openai/v1`, any query of the base URL appended by the pool):
- create: `POST /responses` with the client's JSON, only `model` mapped. The answer is a
  response object whose `usage` has `input_tokens` / `output_tokens`; with `stream: true`, typed
  SSE events (`event: response.output_text.delta`, `data: {"type": ..., "sequence_number": n}`)
  ending with `response.completed` (usage on its `response`), `response.incomplete`,
  `response.failed` or an `error` event, and no `[DONE]`.
- retrieve `GET /responses/{id}` (`?stream=true&starting_after=N`: the events again), delete
  `DELETE /responses/{id}`, cancel `POST /responses/{id}/cancel`, list
  `GET /responses/{id}/input_items`.
Errors: OpenAI's `{"error": {...}}`, read by `openai_errors.said`, mapped by the status table.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import orjson

from unigate.errors import UpstreamRejected
from unigate.providers.base import Reply, RouteFailed, StreamBroken, Timeouts, scrubbed
from unigate.providers.body_stream import sse_events
from unigate.providers.http import UpstreamHTTP, raise_for_answer, read_all
from unigate.providers.openai import errors as openai_errors
from unigate.providers.redact import Redactor
from unigate.providers.upstream_status import client_error
from unigate.translate.sse import event_data, split_events
from unigate.transport.response import Response
from unigate.usage.recorder import Usage

RESPONSES_FORMAT = "openai-responses"
Query = Mapping[str, str] | Sequence[tuple[str, str]]

# Quoted type names: inside a JSON string a quote is escaped, so model text never matches them.
_ENDING = re.compile(rb'"response\.(?:completed|incomplete|failed)"|"type"\s*:\s*"error"')
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_DELTA = b'.delta"'  # the end of a `*.delta` type name: one per streamed piece of output


def body_usage(data: bytes) -> Usage:
    """Usage of a whole response object: its top-level `usage`, parsed rather than scanned,
    since OpenAI puts `metadata` (client-chosen keys, "usage" among them) after it."""
    try:
        return _usage_of(orjson.loads(data))
    except orjson.JSONDecodeError:
        return Usage()


def _usage_of(response: Any) -> Usage:
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return Usage()
    return Usage(_count(usage.get("input_tokens")), _count(usage.get("output_tokens")))


def _count(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


async def relay_events(resp: Response, usage: Usage, redactor: Redactor) -> AsyncIterator[bytes]:
    """Relay a Responses event stream run by run as received. Until the final event reports
    usage, each delta event counts as one output token (a client that leaves mid-stream pays
    for what it got); a stream without a final event (`response.completed` / `.incomplete` /
    `.failed`, or `error`) is a broken one. Error events are the upstream's words: scrubbed."""
    ended = reported = False
    deltas = 0
    try:
        async for run in sse_events(resp):
            if not reported:
                deltas += run.count(_DELTA)
                usage.completion_tokens = deltas
            if _ends(run):
                run, final = _read_endings(run, usage, redactor)
                ended = ended or final
                reported = reported or final
            yield run
    finally:
        resp.release()
    if not ended:
        raise StreamBroken("The upstream stream ended before completion.")


def _ends(data: bytes) -> bool:
    """Whether `data` may hold a final or error event (most runs are deltas: one scan)."""
    return _ENDING.search(data) is not None


def _read_endings(run: bytes, usage: Usage, redactor: Redactor) -> tuple[bytes, bool]:
    """The run with its error events scrubbed, and whether it held a final event (whose
    usage, if any, is recorded). Only the events that may be one are parsed."""
    out = []
    final = False
    for event in split_events(run):
        kind = ""
        if _ends(event):
            try:
                parsed = orjson.loads(event_data(event))
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict) and isinstance(parsed.get("type"), str):
                kind = parsed["type"]
                if kind in _TERMINAL:
                    final = True
                    found = _usage_of(parsed.get("response"))
                    if found.prompt_tokens or found.completion_tokens:
                        usage.prompt_tokens, usage.completion_tokens = (
                            found.prompt_tokens,
                            found.completion_tokens,
                        )
                elif kind == "error":
                    final = True
        out.append(redactor.data(event) if kind in ("error", "response.failed") else event)
    return b"".join(out), final


class ResponsesRelay:
    """The Responses endpoints of one upstream, over the adapter's connection pool."""

    def __init__(self, http: UpstreamHTTP, redactor: Redactor) -> None:
        self.http = http
        self.redactor = redactor

    async def create(self, body: bytes, timeouts: Timeouts, stream: bool) -> Reply:
        """A routed call: failures follow the adapter contract (RouteFailed, UpstreamRejected;
        the router scrubs them)."""
        resp = await self.http.post("/responses", body, timeouts, replay=True)  # text: a repeat is harmless
        if resp.status >= 400:
            await raise_for_answer(resp, openai_errors.said)
        return await self._reply(resp, stream)

    async def lookup(
        self, method: str, upstream_id: str, tail: str, timeouts: Timeouts, query: Query = ()
    ) -> Reply:
        """`method /responses/{id}{tail}?{query}` for a response this upstream holds: its answer
        (a stream when it answers one). Not routed, so failures are raised ready to render:
        `UpstreamRejected` (404 and the like, OpenAI's body relayed) or `UpstreamFailed`, both
        scrubbed of the provider's secrets."""
        path = f"/responses/{quote(upstream_id, safe='')}{tail}"
        if query:
            path += "?" + urlencode(query)
        try:
            resp = await self.http.request(method, path, b"", timeouts)
            if resp.status >= 400:
                await raise_for_answer(resp, openai_errors.said, clients_404=True)
            return await self._reply(resp, None)
        except UpstreamRejected as exc:
            scrubbed(exc, self.redactor)
            raise
        except RouteFailed as exc:
            scrubbed(exc, self.redactor)
            raise client_error(exc, exc.message) from None

    async def _reply(self, resp: Response, stream: bool | None) -> Reply:
        """`stream` None: whatever the upstream answered (a retrieve may be either)."""
        content_type = resp.headers.get("Content-Type", "application/json")
        if stream is None:
            stream = content_type.startswith("text/event-stream")
        if stream:
            reply = Reply(
                status=resp.status,
                content_type=content_type.encode("latin-1"),
                close=resp.close,
                wire=RESPONSES_FORMAT,
            )
            reply.stream = relay_events(resp, reply.usage, self.redactor)
            return reply
        data = await read_all(resp)
        return Reply(
            status=resp.status,
            content_type=content_type.encode("latin-1"),
            body=data,
            usage=body_usage(data),
            wire=RESPONSES_FORMAT,
        )
