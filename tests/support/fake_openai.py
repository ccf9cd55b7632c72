"""A fake OpenAI-compatible upstream on 127.0.0.1 that speaks the real wire format
(JSON bodies, SSE chunks, OpenAI error shape) and records what it received. A chat request
with `web_search_options` (and no tool to call) is answered like OpenAI's search models: text
with `url_citation` annotations, streamed as a last `delta.annotations` chunk.

Behaviour is scripted per instance through `mode`:
  ok            normal answers
  fail500       HTTP 500 with an OpenAI error body
  fail429       HTTP 429 with Retry-After
  hang          accept, then never answer (the gateway's timeout must fire)
  die_first     streams: send headers, then drop the connection before any event
  die_mid       streams: send two events, then drop the connection
  reject400     HTTP 400 with an OpenAI error body (must be relayed, not retried)
  slow_stream   streams: wait `slow_seconds` between events (client disconnect tests)

A tool call goes to the first tool with `{"city": "Paris"}`, or, when `tool_call` names an
offered tool, to that one with the scripted arguments; after a tool message it answers
"The tool said: ..." quoting it.
"""

from __future__ import annotations

import asyncio
import base64
import struct
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.net import free_port

SEARCHED = "Sources agree: the tide turns at noon in Brest."
CITED = "the tide turns at noon"
CITATION = {
    "type": "url_citation",
    "url_citation": {
        "url": "https://fake-openai.test/tides",
        "title": "Tides of Brest",
        "start_index": SEARCHED.index(CITED),
        "end_index": SEARCHED.index(CITED) + len(CITED),
    },
}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeOpenAI(LoopbackServer):
    mode: str = "ok"
    reply_text: str = "Hello from the fake upstream"
    tool_call: tuple[str, dict[str, Any]] | None = None  # (name, arguments) to call when offered
    refusal: str | None = None  # set: chat answers refuse with this text instead of replying
    slow_seconds: float = 0.5
    received: list[Received] = field(default_factory=list)
    cancelled: int = 0
    # What `GET /v1/models` lists (OpenAI's list shape); the key it takes, when set (else 401).
    models: tuple[str, ...] = ("fake-gpt-1", "fake-gpt-2")
    api_key: str | None = None
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/moderations", self._moderations)
        app.router.add_get("/v1/models", self._models)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_request_error")
        data = [{"id": m, "object": "model", "created": 1700000000, "owned_by": "fake"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _common(self, request: web.Request) -> tuple[dict[str, Any], web.StreamResponse | None]:
        body = orjson.loads(await request.read())
        self.received.append(Received(request.path, {k.lower(): v for k, v in request.headers.items()}, body))
        if self.mode == "fail500":
            return body, _error(500, "upstream exploded", "server_error")
        if self.mode == "fail429":
            resp = _error(429, "slow down", "rate_limit_exceeded")
            resp.headers["Retry-After"] = "7"
            return body, resp
        if self.mode == "reject400":
            return body, _error(400, "upstream says the request is bad", "invalid_request_error")
        if self.mode == "hang":
            for _ in range(300):  # 30 s, or until the gateway drops the request
                await asyncio.sleep(0.1)
                if request.transport is None or request.transport.is_closing():
                    self.cancelled += 1
                    break
        return body, None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, early = await self._common(request)
        if early is not None:
            return early
        model = body["model"]
        tools = body.get("tools") or []
        last = body["messages"][-1]
        if tools and body.get("tool_choice") != "none" and last.get("role") != "tool":
            name, args = tools[0]["function"]["name"], '{"city": "Paris"}'
            if self.tool_call is not None and self.tool_call[0] in {t["function"]["name"] for t in tools}:
                name, args = self.tool_call[0], orjson.dumps(self.tool_call[1]).decode()
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {
                        "id": "call_fake1",
                        "type": "function",
                        "function": {"name": name, "arguments": args},
                    }
                ],
            }
            finish = "tool_calls"
        elif body.get("web_search_options") is not None and last.get("role") != "tool":
            message = {"role": "assistant", "content": SEARCHED, "refusal": None, "annotations": [CITATION]}
            finish = "stop"
        else:
            text = self.reply_text
            if last.get("role") == "tool":
                text = f"The tool said: {last.get('content')}"
            message = {"role": "assistant", "content": text, "refusal": None}
            if self.refusal is not None:
                message = {"role": "assistant", "content": None, "refusal": self.refusal}
            finish = "stop"
        usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        if body.get("stream"):
            return await self._stream_chat(request, body, model, message, finish, usage)
        return web.json_response(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            }
        )

    async def _stream_chat(
        self,
        request: web.Request,
        body: dict[str, Any],
        model: str,
        message: dict[str, Any],
        finish: str,
        usage: dict[str, int],
    ) -> web.StreamResponse:
        base = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        chunks: list[dict[str, Any]] = [
            {
                **base,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                ],
            }
        ]
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            chunks.append(
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [
                                    {
                                        "index": 0,
                                        "id": call["id"],
                                        "type": "function",
                                        "function": {"name": call["function"]["name"], "arguments": ""},
                                    }
                                ]
                            },
                            "finish_reason": None,
                        }
                    ],
                }
            )
            args = call["function"]["arguments"]
            for piece in (args[:5], args[5:]):
                chunks.append(
                    {
                        **base,
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]},
                                "finish_reason": None,
                            }
                        ],
                    }
                )
        elif message.get("refusal"):
            for word in message["refusal"].split(" "):
                chunks.append(
                    {
                        **base,
                        "choices": [{"index": 0, "delta": {"refusal": word + " "}, "finish_reason": None}],
                    }
                )
        else:
            for word in message["content"].split(" "):
                chunks.append(
                    {
                        **base,
                        "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}],
                    }
                )
            if message.get("annotations"):  # OpenAI's last content chunk holds only the annotations
                delta = {"annotations": message["annotations"]}
                chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": usage})
        return await self._send_stream(request, chunks)

    async def _send_stream(self, request: web.Request, chunks: list[dict[str, Any]]) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if self.mode == "die_first":
            assert request.transport is not None
            request.transport.close()
            return resp
        try:
            for i, chunk in enumerate(chunks):
                if self.mode == "die_mid" and i == 2:
                    assert request.transport is not None
                    request.transport.close()
                    return resp
                await resp.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
                if self.mode == "slow_stream":
                    await asyncio.sleep(self.slow_seconds)
            await resp.write(b"data: [DONE]\n\n")
        except (asyncio.CancelledError, ConnectionResetError):
            self.cancelled += 1
            raise
        return resp

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body, early = await self._common(request)
        if early is not None:
            return early
        model = body["model"]
        usage = {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}
        text = " and so it continues"
        if body.get("stream"):
            base = {
                "id": "cmpl-fake",
                "object": "text_completion",
                "created": int(time.time()),
                "model": model,
            }
            chunks: list[dict[str, Any]] = [
                {**base, "choices": [{"index": 0, "text": w, "finish_reason": None, "logprobs": None}]}
                for w in (" and", " so", " it", " continues")
            ]
            chunks.append(
                {**base, "choices": [{"index": 0, "text": "", "finish_reason": "stop", "logprobs": None}]}
            )
            if (body.get("stream_options") or {}).get("include_usage"):
                chunks.append({**base, "choices": [], "usage": usage})
            return await self._send_stream(request, chunks)
        return web.json_response(
            {
                "id": "cmpl-fake",
                "object": "text_completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
                "usage": usage,
            }
        )

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body, early = await self._common(request)
        if early is not None:
            return early
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for i, _ in enumerate(inputs):
            vector = [0.5, -0.25, 0.125, float(i)]
            if body.get("encoding_format") == "base64":
                emb: Any = base64.b64encode(struct.pack("<4f", *vector)).decode()
            else:
                emb = vector
            data.append({"object": "embedding", "index": i, "embedding": emb})
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            }
        )

    async def _moderations(self, request: web.Request) -> web.StreamResponse:
        body, early = await self._common(request)
        if early is not None:
            return early
        value = body["input"]
        if isinstance(value, str):
            results = [moderation_result(value, False)]
        elif all(isinstance(v, str) for v in value):
            results = [moderation_result(v, False) for v in value]
        else:
            text = " ".join(p["text"] for p in value if p["type"] == "text")
            results = [moderation_result(text, any(p["type"] == "image_url" for p in value))]
        model = body.get("model", "omni-moderation-latest")
        return web.json_response({"id": "modr-fake", "model": model, "results": results})


MODERATION_CATEGORIES = (
    "harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
    "self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence",
    "violence/graphic",
)  # fmt: skip
IMAGE_MODERATION = ("self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "violence",
                    "violence/graphic")  # fmt: skip


def moderation_result(text: str, image: bool) -> dict[str, Any]:
    """OpenAI's result for one input: `violence` flagged when the text says "kill"."""
    scores = {c: 0.0001 for c in MODERATION_CATEGORIES}
    if "kill" in text.lower():
        scores["violence"] = 0.93
    kinds = (["text"] if text else []) + (["image"] if image else [])
    return {
        "flagged": any(v >= 0.5 for v in scores.values()),
        "categories": {c: v >= 0.5 for c, v in scores.items()},
        "category_scores": scores,
        "category_applied_input_types": {
            c: kinds if c in IMAGE_MODERATION else kinds[:1] if text else [] for c in MODERATION_CATEGORIES
        },
    }


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": kind, "param": None, "code": kind}}, status=status
    )
