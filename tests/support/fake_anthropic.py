"""A fake Anthropic Messages upstream on 127.0.0.1: JSON answers and `event:`/`data:` SSE in
Anthropic's real framing, tool use when tools are offered, recorded requests, scripted death.

Tool use calls the first tool offered with `{"city": "Paris"}`, or, when `tool_call` names a
tool the request offers, that tool with the scripted input (an agent's real tool, e.g. Claude
Code's `Read`); after a tool result it answers "The tool said: ..." quoting the result."""

from __future__ import annotations

import asyncio
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
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count)

    def _answer(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        last = body["messages"][-1]
        content = last["content"] if isinstance(last["content"], list) else []
        result = next((b for b in content if b.get("type") == "tool_result"), None)
        if body.get("tools") and result is None:
            tool, args = body["tools"][0]["name"], {"city": "Paris"}
            offered = {t.get("name") for t in body["tools"]}
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
        usage = {"input_tokens": 21, "output_tokens": 9}
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
        self, model: str, blocks: list[dict[str, Any]], stop: str, usage: dict[str, int]
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
        block = blocks[0]
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            for word in block["text"].split(" "):
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": word + " "},
                        },
                    )
                )
        else:
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {
                            "type": "tool_use",
                            "id": block["id"],
                            "name": block["name"],
                            "input": {},
                        },
                    },
                )
            )
            args = orjson.dumps(block["input"]).decode()
            for piece in (args[:4], args[4:]):
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
                )
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return events
