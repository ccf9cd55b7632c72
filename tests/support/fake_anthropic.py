"""A fake Anthropic Messages upstream on 127.0.0.1: JSON answers and `event:`/`data:` SSE in
Anthropic's real framing, tool use when tools are offered, recorded requests, scripted death.

Tool use calls the first tool offered with `{"city": "Paris"}`, or, when `tool_call` names a
tool the request offers, that tool with the scripted input (an agent's real tool, e.g. Claude
Code's `Read`); after a tool result it answers "The tool said: ..." quoting the result.

With the web search server tool offered (and no client tool to call) it searches as Anthropic
does: a `server_tool_use` block, a `web_search_tool_result` block, then text whose cited part
is a text block of its own with a `web_search_result_location` citation (streamed as a
`citations_delta` before its text)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.net import free_port


@dataclass
class FakeAnthropic(LoopbackServer):
    mode: str = "ok"  # ok | die_mid | slow (pause `slow_seconds` between events)
    slow_seconds: float = 0.5
    cancelled: int = 0
    text: str = "Hello from the fake Anthropic upstream"
    tool_call: tuple[str, dict[str, Any]] | None = None  # (name, input) to call when offered
    received: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)  # request bodies as sent
    queries: list[str] = field(default_factory=list)
    counted: list[bytes] = field(default_factory=list)  # count_tokens bodies as sent
    models: tuple[str, ...] = ("claude-fake-1",)  # what `GET /v1/models` lists
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count)
        app.router.add_get("/v1/models", self._models)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        data = [
            {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
            for m in self.models
        ]
        first, last = (self.models[0], self.models[-1]) if self.models else (None, None)
        return web.json_response({"data": data, "has_more": False, "first_id": first, "last_id": last})

    def _answer(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        last = body["messages"][-1]
        content = last["content"] if isinstance(last["content"], list) else []
        result = next((b for b in content if b.get("type") == "tool_result"), None)
        tools = body.get("tools") or []
        client_tools = [t for t in tools if not str(t.get("type", "")).startswith("web_search_")]
        if len(client_tools) < len(tools) and not client_tools and result is None:
            return _searched(last["content"] if isinstance(last["content"], str) else "search"), "end_turn"
        if client_tools and result is None:
            tool, args = client_tools[0]["name"], {"city": "Paris"}
            offered = {t.get("name") for t in client_tools}
            if self.tool_call is not None and self.tool_call[0] in offered:
                tool, args = self.tool_call
            return [{"type": "tool_use", "id": "toolu_fake1", "name": tool, "input": args}], "tool_use"
        text = f"The tool said: {result['content']}" if result else self.text
        return [{"type": "text", "text": text}], "end_turn"

    async def _count(self, request: web.Request) -> web.Response:
        """Anthropic's count: `input_tokens` only (it refuses `max_tokens`); here one token per
        character of the request, so tests can tell the upstream's count from an estimate."""
        raw = await request.read()
        body = orjson.loads(raw)
        self.counted.append(raw)
        self.queries.append(request.query_string)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        if "max_tokens" in body:
            return web.json_response(
                {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: extra"}},
                status=400,
            )
        return web.json_response({"input_tokens": 1000 + len(raw)})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = orjson.loads(raw)
        self.raw.append(raw)
        self.queries.append(request.query_string)
        self.received.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        blocks, stop = self._answer(body)
        usage: dict[str, Any] = {"input_tokens": 21, "output_tokens": 9}
        if blocks[0]["type"] == "server_tool_use":
            usage["server_tool_use"] = {"web_search_requests": 1, "web_fetch_requests": 0}
        if not body.get("stream"):
            return web.json_response(
                {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        events = self._events(body["model"], blocks, stop, usage)
        try:
            for i, (kind, data) in enumerate(events):
                if self.mode == "die_mid" and i == 4:
                    assert request.transport is not None
                    request.transport.close()
                    return resp
                await resp.write(b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n")
                await asyncio.sleep(self.slow_seconds if self.mode == "slow" else 0)
        except (asyncio.CancelledError, ConnectionResetError):
            self.cancelled += 1
            raise
        return resp

    def _events(
        self, model: str, blocks: list[dict[str, Any]], stop: str, usage: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        message = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1},
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": message}),
            ("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(blocks):
            events += _block_events(index, block)
        delta_usage = {k: v for k, v in usage.items() if k != "input_tokens"}
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": delta_usage,
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return events


def _delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """One content block as Anthropic streams it: its start (empty where deltas fill it), its
    deltas, its stop."""
    kind = block["type"]
    if kind == "text":
        opening: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [
            _delta(index, {"type": "citations_delta", "citation": c}) for c in block.get("citations") or []
        ]
        deltas += [
            _delta(index, {"type": "text_delta", "text": w}) for w in re.findall(r"\S+\s*|\s+", block["text"])
        ]
    elif kind in ("tool_use", "server_tool_use"):
        opening = {**block, "input": {}}
        args = orjson.dumps(block["input"]).decode()
        deltas = [
            _delta(index, {"type": "input_json_delta", "partial_json": p}) for p in (args[:4], args[4:])
        ]
    else:  # a result block arrives whole
        opening, deltas = block, []
    start = ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
    return [start, *deltas, ("content_block_stop", {"type": "content_block_stop", "index": index})]


SEARCH_PAGE = "https://fake-anthropic.test/tides"
CITED_TEXT = "High tide in Brest is at noon"


def _searched(query: str) -> list[dict[str, Any]]:
    use = {"type": "server_tool_use", "id": "srvtoolu_fake1", "name": "web_search", "input": {"query": query}}
    page = {"type": "web_search_result", "url": SEARCH_PAGE, "title": "Brest tides",
            "encrypted_content": "EqgfCioIARgBIiQ3", "page_age": "April 30, 2025"}  # fmt: skip
    citation = {"type": "web_search_result_location", "url": SEARCH_PAGE, "title": "Brest tides",
                "cited_text": "High tide: 12:04.", "encrypted_index": "Eo8BCioIAhgBIiQy"}  # fmt: skip
    return [
        use,
        {"type": "web_search_tool_result", "tool_use_id": use["id"], "content": [page]},
        {"type": "text", "text": "According to the search, "},
        {"type": "text", "text": CITED_TEXT, "citations": [citation]},
        {"type": "text", "text": "."},
    ]
