"""`POST /v1/messages`: the Anthropic Messages format in, any upstream behind it.

The request is translated to the gateway's canonical (OpenAI) form, routed like any chat call,
and the answer - a body or a stream, already peeked so fallback stays possible - is translated
back to Anthropic's shape. Errors use Anthropic's error body.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson

from unigate.api.text import TextAPI
from unigate.asgi import Request
from unigate.auth.principal import Principal
from unigate.endpoints import Endpoint
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import Reply, StreamBroken, TextCall
from unigate.translate.anthropic import (
    OpenAIToAnthropicStream,
    anthropic_to_openai_request,
    openai_to_anthropic_response,
)


def anthropic_error_event(message: str) -> bytes:
    """The Anthropic SDK raises on an `error` event; no `message_stop` follows."""
    body = orjson.dumps({"type": "error", "error": {"type": "api_error", "message": message}})
    return b"event: error\ndata: " + body + b"\n\n"


def _present(model: str, reply: Reply) -> Reply:
    if reply.stream is None:
        body = orjson.dumps(openai_to_anthropic_response(orjson.loads(reply.body), model))
        return Reply(reply.status, b"application/json", body, usage=reply.usage, headers=reply.headers)
    return Reply(
        reply.status,
        b"text/event-stream",
        stream=_events(model, reply.stream),
        usage=reply.usage,
        headers=reply.headers,
        close=reply.close,
    )


async def _events(model: str, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    translator = OpenAIToAnthropicStream(model)
    async for run in chunks:
        out = translator.feed(run)
        if out:
            yield out
    tail = translator.finish()
    if translator.broken:
        raise StreamBroken("The upstream stream ended before completion.")
    if tail:
        yield tail


class MessagesAPI:
    def __init__(self, gw: Gateway) -> None:
        self.text = TextAPI(gw)
        self.limit = gw.config.limits.max_json_body

    async def messages(self, request: Request, principal: Principal | None) -> None:
        _, payload = await request.json_object(self.limit)
        model = payload.get("model")
        if not isinstance(model, str) or not model:
            raise InvalidRequest("`model` is required and must be a string.", param="model")
        if not isinstance(payload.get("max_tokens"), int) or isinstance(payload.get("max_tokens"), bool):
            raise InvalidRequest("`max_tokens` is required and must be an integer.", param="max_tokens")
        stream = payload.get("stream")
        if stream is not None and not isinstance(stream, bool):
            raise InvalidRequest("`stream` must be a boolean.", param="stream")
        canonical = anthropic_to_openai_request(payload)
        call = TextCall("chat", orjson.dumps(canonical), canonical, model, bool(stream), bool(stream))
        await self.text.serve(
            request, principal, call, lambda reply: _present(model, reply), anthropic_error_event
        )


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = MessagesAPI(gw)
    return [Endpoint("POST", "/v1/messages", api.messages, family="text", style="anthropic")]
