"""`POST /v1/messages`: the Anthropic Messages format in, any upstream behind it.

A model routed to an `anthropic` upstream gets the client's request itself: its body bytes with
only the model id replaced, its query string and its `anthropic-beta` / `anthropic-version`
headers, and the client gets the upstream's bytes back, streams included. Any other route gets
the request translated to the gateway's canonical (OpenAI) form, once, when a route first needs
it (`api/serving/dialect_call.py`), and its answer - a body or a stream, already peeked so fallback
stays possible - is translated back to Anthropic's shape; what the translation could not carry
is named in `x-unigate-dropped-fields`. Errors use Anthropic's error body.

`POST /v1/messages/count_tokens` asks the upstream the model's route leads to when it can count
(Anthropic's own `count_tokens`, Gemini's `countTokens`), else answers the gateway's local
count (`api/serving/token_count.py`). `GET /v1/models[/{id}]` in Anthropic's shape: `anthropic_models`.
"""

from __future__ import annotations

from unigate.api.anthropic import models as anthropic_models
from unigate.api.openai.text import TextAPI
from unigate.api.serving.dialect_call import DialectCall
from unigate.api.serving.hosted_tools import HostedTools
from unigate.api.serving.present import presenter
from unigate.api.serving.relay import Framing
from unigate.api.serving.token_count import TokenCounter
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.gateway import Gateway
from unigate.providers.same_format import ClientRequest, relayed_query
from unigate.shapes.anthropic import COUNT_TOKENS, MESSAGES
from unigate.translate.anthropic import (
    TURNS_BYTES,
    OpenAIToAnthropicStream,
    Turns,
    anthropic_to_openai_request,
    openai_to_anthropic_response,
    translate_messages,
)
from unigate.translate.sse import json_event

FORMAT = "anthropic"


def anthropic_error_event(message: str) -> bytes:
    """The Anthropic SDK raises on an `error` event; no `message_stop` follows."""
    return json_event({"type": "error", "error": {"type": "api_error", "message": message}}, "error")


# Anthropic's own keep-alive is a `ping` event, which its SDKs expect and skip.
ANTHROPIC_FRAMING = Framing(anthropic_error_event, json_event({"type": "ping"}, "ping"))

# The client headers an Anthropic client's relayed request keeps: they select the API version
# and the beta features (context management, interleaved thinking, ...) the body relies on.
RELAYED_HEADERS = (b"anthropic-beta", b"anthropic-version")


def client_request(request: Request, raw: bytes) -> ClientRequest:
    """What an Anthropic upstream gets of the client's request besides its parsed body."""
    headers = {}
    for name in RELAYED_HEADERS:
        value = request.header(name)
        if value is not None:
            headers[name.decode()] = value.decode("latin-1")
    return ClientRequest(raw, relayed_query(request.scope.get("query_string", b"")), headers)


class MessagesAPI:
    def __init__(self, gw: Gateway) -> None:
        self.text = TextAPI(gw)
        self.counter = TokenCounter(self.text.serving)
        self.limit = gw.config.limits.max_json_body
        self.hosted = HostedTools(gw)
        self.turns = Turns(TURNS_BYTES)  # this process's recent translated turns

    async def messages(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        checked = MESSAGES.check(payload)  # what routing reads; the conversation is the translator's
        model, stream = checked.model, checked.stream
        client = client_request(request, raw)
        call = DialectCall(
            FORMAT,
            payload,
            model,
            bool(stream),
            client,
            lambda: translate_messages(payload, self.turns, principal.key_id),
            hosted=self.hosted,
            key_id=principal.key_id,
        )
        await self.text.serve(
            request,
            principal,
            call.text_call(),
            present=presenter(FORMAT, model, openai_to_anthropic_response, OpenAIToAnthropicStream),
            framing=ANTHROPIC_FRAMING,
            native=call.route,
            finish=call.finish,
        )

    async def count_tokens(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        model = COUNT_TOKENS.check(payload).model
        await self.counter.count(
            request,
            principal,
            FORMAT,
            payload,
            model,
            client_request(request, raw),
            lambda: anthropic_to_openai_request(payload),
            lambda count: {"input_tokens": count},
        )


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = MessagesAPI(gw)
    return [
        Endpoint("POST", "/v1/messages", api.messages, family="text", style="anthropic"),
        Endpoint("POST", "/v1/messages/count_tokens", api.count_tokens, family="text", style="anthropic"),
        *anthropic_models.endpoints(gw),
    ]
