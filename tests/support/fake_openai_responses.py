"""A fake OpenAI upstream on 127.0.0.1 that serves the Responses API natively, in OpenAI's wire
format (responses_wire.py): create (plain, streamed as typed SSE events with `sequence_number`s,
or in the background), retrieve (also `?stream=true&starting_after=N`), delete, cancel and
input_items, with responses kept in memory per id so `previous_response_id` chains work.

It records every request as received (`received`: method, path, query, headers, raw bytes) so
tests can check what a relay forwarded byte for byte. Replies are deterministic: a function call
to the first function tool (or to the one `tool_call` names, with its scripted arguments, when
offered) while tools are offered and the last input is no tool output; "The tool said: ..."
after a tool output; otherwise `reply_text` with the turn number and the first
user message of the conversation (so a chain shows the upstream saw its history). Usage counts
words: every text of the conversation and the instructions in, the answer's words out.

`mode` scripts failures:
  ok          normal answers
  fail500     HTTP 500 with an OpenAI error body
  fail429     HTTP 429 with Retry-After: 7
  reject400   HTTP 400 with an OpenAI error body quoting the request's credential
  die_first   streams: headers, then the connection dropped before any event
  die_mid     streams: `die_after` events, then the connection dropped
`prefix` is where the API lives (`/v1`; `/openai/v1` plays Azure's v1 surface).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support import responses_wire as wire
from tests.support.loopback import LoopbackServer
from tests.support.net import free_port


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> Any:
        return orjson.loads(self.raw) if self.raw else None


@dataclass
class Stored:
    response: dict[str, Any]
    input: list[dict[str, Any]]  # this call's input items, ids assigned
    history: list[dict[str, Any]]  # the conversation up to and including this call's output
    context: list[dict[str, Any]] = field(
        default_factory=list
    )  # what input_items lists: history before the output


@dataclass
class FakeOpenAIResponses(LoopbackServer):
    mode: str = "ok"
    reply_text: str = "Hello from the fake Responses upstream"
    tool_call: tuple[str, dict[str, Any]] | None = None  # (name, arguments) to call when offered
    die_after: int = 4
    background_seconds: float = 0.4
    event_delay: float = 0.0  # seconds between stream events (a slow upstream)
    prefix: str = "/v1"
    received: list[Seen] = field(default_factory=list)
    stored: dict[str, Stored] = field(default_factory=dict)
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def _routes(self, app: web.Application) -> None:
        root = f"{self.prefix}/responses"
        app.router.add_post(root, self._create)
        app.router.add_get(root + "/{id}", self._retrieve)
        app.router.add_delete(root + "/{id}", self._delete)
        app.router.add_post(root + "/{id}/cancel", self._cancel)
        app.router.add_get(root + "/{id}/input_items", self._input_items)

    async def _record(self, request: web.Request) -> web.Response | None:
        raw = await request.read()
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.received.append(Seen(request.method, request.path, request.query_string, headers, raw))
        if self.mode == "fail500":
            return _error(500, "The server had an error while processing your request.", "server_error")
        if self.mode == "fail429":
            resp = _error(429, "Rate limit reached.", "rate_limit_exceeded", code="rate_limit_exceeded")
            resp.headers["Retry-After"] = "7"
            return resp
        if self.mode == "reject400":  # quoting the credential, as some upstreams do
            said = headers.get("authorization") or headers.get("api-key", "")
            return _error(400, f"the request is bad (sent with {said})", "invalid_request_error")
        return None

    # -- create --

    async def _create(self, request: web.Request) -> web.StreamResponse:
        early = await self._record(request)
        if early is not None:
            return early
        body = self.received[-1].body
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return _error(400, "Missing required parameter: 'model'.", "invalid_request_error", "model")
        history: list[dict[str, Any]] = []
        previous = body.get("previous_response_id")
        if previous is not None:
            before = self.stored.get(previous)
            if before is None:
                return _error(
                    400,
                    f"Previous response with id '{previous}' not found.",
                    "invalid_request_error",
                    "previous_response_id",
                    "previous_response_not_found",
                )
            history = list(before.history)
        items = wire.input_items(body.get("input", []))
        final = self._answer(body, history, items)
        if body.get("store", True):
            conversation = [*history, *items, *final["output"]]
            self.stored[final["id"]] = Stored(final, items, conversation, [*history, *items])
        if body.get("background"):
            return self._start_background(final)
        if body.get("stream"):
            return await self._send_events(request, wire.stream_events(final))
        return web.json_response(final)

    def _answer(
        self, body: dict[str, Any], history: list[dict[str, Any]], items: list[dict[str, Any]]
    ) -> dict[str, Any]:
        conversation = [*history, *items]
        last = items[-1] if items else {}
        tools = [t for t in body.get("tools") or [] if t.get("type") == "function"]
        if tools and body.get("tool_choice") != "none" and last.get("type") != "function_call_output":
            name, args = tools[0]["name"], '{"city":"Paris"}'
            if self.tool_call is not None and self.tool_call[0] in {t["name"] for t in tools}:
                name, args = self.tool_call[0], orjson.dumps(self.tool_call[1]).decode()
            output = wire.function_call_item(name, args)
            produced = 5
        else:
            if last.get("type") == "function_call_output":
                text = f"The tool said: {last.get('output')}"
            else:
                users = [i for i in conversation if i.get("type") == "message" and i.get("role") == "user"]
                first = wire.text_of(users[0]) if users else ""
                text = f"{self.reply_text} (turn {len(users)}; first message: {first})"
            output = wire.message_item(text)
            produced = wire.words(text)
        said = sum(wire.words(wire.text_of(i)) for i in conversation)
        said += wire.words(str(body.get("instructions") or ""))
        final = wire.response_object(body, wire.new_id("resp"), "completed")
        final["output"] = [output]
        final["usage"] = wire.usage(max(said, 1), produced)
        final["completed_at"] = final["created_at"]
        return final

    def _start_background(self, final: dict[str, Any]) -> web.Response:
        """Answer `queued` at once; `in_progress` half way, then the final state (unless
        cancelled meanwhile)."""
        response_id = final["id"]
        queued = {**final, "status": "queued", "output": [], "usage": None, "completed_at": None}
        self.stored.setdefault(response_id, Stored(final, [], [])).response = queued
        loop = asyncio.get_running_loop()

        def advance(state: dict[str, Any]) -> None:
            entry = self.stored.get(response_id)
            if entry is not None and entry.response["status"] in ("queued", "in_progress"):
                entry.response = state

        loop.call_later(self.background_seconds / 2, advance, {**queued, "status": "in_progress"})
        loop.call_later(self.background_seconds, advance, final)
        return web.json_response(queued)

    async def _send_events(self, request: web.Request, events: list[dict[str, Any]]) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8"})
        await resp.prepare(request)
        for i, event in enumerate(events):
            if (self.mode == "die_first" and i == 0) or (self.mode == "die_mid" and i == self.die_after):
                assert request.transport is not None
                request.transport.close()
                return resp
            await resp.write(f"event: {event['type']}\n".encode() + b"data: " + orjson.dumps(event) + b"\n\n")
            if self.event_delay:
                await asyncio.sleep(self.event_delay)
        await resp.write_eof()
        return resp

    # -- retrieval --

    async def _lookup(self, request: web.Request) -> tuple[str, Stored] | web.Response:
        """Record the request, then the stored response it names; or the answer to send
        instead (a scripted failure, or OpenAI's 404)."""
        early = await self._record(request)
        if early is not None:
            return early
        response_id = request.match_info["id"]
        entry = self.stored.get(response_id)
        return (response_id, entry) if entry is not None else _not_found(response_id)

    async def _retrieve(self, request: web.Request) -> web.StreamResponse:
        found = await self._lookup(request)
        if isinstance(found, web.Response):
            return found
        _response_id, entry = found
        if request.query.get("stream") == "true":
            after = int(request.query.get("starting_after", "-1"))
            events = [e for e in wire.stream_events(entry.response) if e["sequence_number"] > after]
            return await self._send_events(request, events)
        return web.json_response(entry.response)

    async def _delete(self, request: web.Request) -> web.Response:
        found = await self._lookup(request)
        if isinstance(found, web.Response):
            return found
        response_id, _entry = found
        del self.stored[response_id]
        return web.json_response({"id": response_id, "object": "response", "deleted": True})

    async def _cancel(self, request: web.Request) -> web.Response:
        found = await self._lookup(request)
        if isinstance(found, web.Response):
            return found
        _response_id, entry = found
        if not entry.response.get("background"):
            return _error(400, "Cannot cancel a synchronous response.", "invalid_request_error")
        if entry.response["status"] in ("queued", "in_progress"):
            entry.response = {**entry.response, "status": "cancelled"}
        return web.json_response(entry.response)

    async def _input_items(self, request: web.Request) -> web.Response:
        found = await self._lookup(request)
        if isinstance(found, web.Response):
            return found
        _response_id, entry = found
        # As OpenAI lists them: the whole context the response answered (earlier turns' inputs
        # and outputs, then this turn's inputs), not only this turn's.
        items = list(entry.context)
        if request.query.get("order", "desc") == "desc":
            items.reverse()
        after = request.query.get("after")
        if after is not None:
            ids = [i["id"] for i in items]
            items = items[ids.index(after) + 1 :] if after in ids else []
        limit = int(request.query.get("limit", "20"))
        page = items[:limit]
        return web.json_response(
            {
                "object": "list",
                "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": len(items) > limit,
            }
        )


def _not_found(response_id: str) -> web.Response:
    return _error(404, f"Response with id '{response_id}' not found.", "invalid_request_error")


def _error(
    status: int, message: str, kind: str, param: str | None = None, code: str | None = None
) -> web.Response:
    return web.json_response(wire.error_body(message, kind, param, code), status=status)
