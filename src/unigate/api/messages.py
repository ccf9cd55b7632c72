"""`POST /v1/messages`: the Anthropic Messages format in, any upstream behind it.

The request is translated to the gateway's canonical (OpenAI) form, routed like any chat call,
and the answer - a body or a stream, already peeked so fallback stays possible - is translated
back to Anthropic's shape. Errors use Anthropic's error body.

`POST /v1/messages/count_tokens` answers `{"input_tokens": N}` from the gateway's own local
estimate (the sandbox's tokenizer over the same canonical request), for whatever upstream the
model routes to: exact for the sandbox (it equals `usage.input_tokens` of the same message),
an approximation for real models. The model is still checked (404, 403); nothing is routed,
rate-limited or charged. `GET /v1/models[/{id}]` in Anthropic's shape: `anthropic_models`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import orjson

from unigate.api import anthropic_models
from unigate.api.hosted_tools import HostedTools
from unigate.api.present import presenter
from unigate.api.text import TextAPI
from unigate.asgi import Request, send_json
from unigate.auth.principal import Principal
from unigate.endpoints import Endpoint
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import Reply, Target, TextCall
from unigate.providers.sandbox.compose import parse_response_format
from unigate.providers.sandbox.conversation import parse_conversation
from unigate.providers.sandbox.tools import parse_tool_policy
from unigate.relay import Framing
from unigate.translate.anthropic import (
    OpenAIToAnthropicStream,
    anthropic_to_openai_request,
    openai_to_anthropic_response,
)
from unigate.translate.dropped import Dropped


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
        self.hosted = HostedTools(gw)

    async def messages(self, request: Request, principal: Principal | None) -> None:
        _, payload = await request.json_object(self.limit)
        model = _model(payload)
        if not isinstance(payload.get("max_tokens"), int) or isinstance(payload.get("max_tokens"), bool):
            raise InvalidRequest("`max_tokens` is required and must be an integer.", param="max_tokens")
        stream = payload.get("stream")
        if stream is not None and not isinstance(stream, bool):
            raise InvalidRequest("`stream` must be a boolean.", param="stream")
        dropped = Dropped()  # server tools a translated route cannot run
        canonical = anthropic_to_openai_request(payload, dropped)
        call = TextCall("chat", orjson.dumps(canonical), canonical, model, bool(stream), bool(stream))

        def native(target: Target) -> Awaitable[Reply] | None:
            if "anthropic" in target.provider.native_formats:
                return target.provider.native(payload, target, bool(stream))
            self.hosted.check(dropped)
            return None

        await self.text.serve(
            request,
            principal,
            call,
            presenter("anthropic", model, openai_to_anthropic_response, OpenAIToAnthropicStream),
            ANTHROPIC_FRAMING,
            native,
            self.hosted.finish("anthropic", principal.key_id, dropped) if principal else None,
        )

    async def count_tokens(self, request: Request, principal: Principal | None) -> None:
        _, payload = await request.json_object(self.limit)
        model = _model(payload)
        assert principal is not None
        self.text.serving.resolve(principal, model)  # 404 / 403 as for a real call
        await send_json(request.send, 200, {"input_tokens": estimate_input_tokens(payload)})


def _model(payload: dict[str, Any]) -> str:
    model = payload.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("`model` is required and must be a string.", param="model")
    return model


def estimate_input_tokens(payload: dict[str, Any]) -> int:
    """The sandbox's prompt count for this Messages request: conversation (system included),
    tool schemas and response format, exactly as its chat completions count them."""
    canonical = anthropic_to_openai_request(payload)
    return (
        parse_conversation(canonical).prompt_tokens()
        + parse_tool_policy(canonical).prompt_tokens()
        + parse_response_format(canonical).prompt_tokens()
    )


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = MessagesAPI(gw)
    return [
        Endpoint("POST", "/v1/messages", api.messages, family="text", style="anthropic"),
        Endpoint("POST", "/v1/messages/count_tokens", api.count_tokens, family="text", style="anthropic"),
        *anthropic_models.endpoints(gw),
    ]
