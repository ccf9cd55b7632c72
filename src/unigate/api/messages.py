"""`POST /v1/messages`: the Anthropic Messages format in, any upstream behind it.

The request is translated to the gateway's canonical (OpenAI) form, routed like any chat call,
and the answer - a body or a stream, already peeked so fallback stays possible - is translated
back to Anthropic's shape. Errors use Anthropic's error body.
"""

from __future__ import annotations

from collections.abc import Awaitable

import orjson

from unigate.api.present import presenter
from unigate.api.text import TextAPI
from unigate.asgi import Request
from unigate.auth.principal import Principal
from unigate.endpoints import Endpoint
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import Reply, Target, TextCall
from unigate.relay import Framing
from unigate.translate.anthropic import (
    OpenAIToAnthropicStream,
    anthropic_to_openai_request,
    openai_to_anthropic_response,
)


def anthropic_error_event(message: str) -> bytes:
    """The Anthropic SDK raises on an `error` event; no `message_stop` follows."""
    body = orjson.dumps({"type": "error", "error": {"type": "api_error", "message": message}})
    return b"event: error\ndata: " + body + b"\n\n"


# Anthropic's own keep-alive is a `ping` event, which its SDKs expect and skip.
ANTHROPIC_FRAMING = Framing(anthropic_error_event, b'event: ping\ndata: {"type": "ping"}\n\n')


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

        def native(target: Target) -> Awaitable[Reply] | None:
            if "anthropic" in target.provider.native_formats:
                return target.provider.native(payload, target, bool(stream))
            return None

        await self.text.serve(
            request,
            principal,
            call,
            presenter("anthropic", model, openai_to_anthropic_response, OpenAIToAnthropicStream),
            ANTHROPIC_FRAMING,
            native,
        )


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = MessagesAPI(gw)
    return [Endpoint("POST", "/v1/messages", api.messages, family="text", style="anthropic")]
