"""Text family (OpenAI format): chat completions, completions, embeddings, moderations, models.

The router checks each body against its declaration (`shapes/text.py`: what routing and
accounting read, the required fields and the types the document states), so a malformed request
gets a clear 400 here; everything else is the upstream's to judge.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from unigate.api.serving.output_family import chat_outputs, require
from unigate.api.serving.relay import OPENAI_FRAMING, Framing
from unigate.api.serving.serve import Admitted, Finish, Serving, ServingCall
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import NotFound
from unigate.gateway import Gateway
from unigate.providers.base import Reply, Target, TextCall
from unigate.shapes.text import (
    CHAT,
    COMPLETION,
    EMBEDDING,
    MODERATION,
    ChatCompletionRequest,
    CompletionRequest,
)

# The `Provider` method each operation calls (looked up on the route's provider per call).
_METHOD: Final = {"chat": "chat", "completions": "complete", "embeddings": "embed", "moderations": "moderate"}
MODERATION_MODEL: Final = "omni-moderation-latest"  # OpenAI's, for a moderation request naming none
# A model id in `GET /v1/models/{model}`: anything but a Gemini action path (`x:generateContent`
# and the like are POST-only, so a GET there is a 405 with `Allow: POST`). Fine-tuned OpenAI ids
# have colons (`ft:gpt-4o-mini:org::id`), so a colon alone cannot be refused.
_GEMINI_ACTIONS: Final = (
    "generateContent|streamGenerateContent|countTokens|embedContent|batchEmbedContents|predictLongRunning"
)
MODEL_PARAM: Final = rf"(?![^/]*:(?:{_GEMINI_ACTIONS})$)[^/]+"


class TextAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.limit = gw.config.limits.max_json_body
        self.serving = Serving(gw)

    async def chat(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        checked = CHAT.check(payload)
        if principal.families:  # a limited key: audio output needs `audio`
            require(principal, chat_outputs(payload))
        stream, usage = chat_stream(checked)
        await self.serve(request, principal, TextCall("chat", raw, payload, checked.model, stream, usage))

    async def completions(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        checked = COMPLETION.check(payload)
        stream, usage = chat_stream(checked)
        call = TextCall("completions", raw, payload, checked.model, stream, usage)
        await self.serve(request, principal, call)

    async def embeddings(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        model = EMBEDDING.check(payload).model
        await self.serve(request, principal, TextCall("embeddings", raw, payload, model))

    async def moderations(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        model = MODERATION.check(payload).model or MODERATION_MODEL
        await self.serve(request, principal, TextCall("moderations", raw, payload, model))

    def serve(
        self,
        request: Request,
        principal: Principal,
        call: TextCall,
        *,
        present: Callable[[Reply], Reply] | None = None,
        framing: Framing = OPENAI_FRAMING,
        native: Callable[[Target], Awaitable[Reply] | None] | None = None,
        finish: Finish | None = None,
        admitted: Admitted | None = None,
    ) -> Awaitable[None]:
        """Route `call`, then send the reply; `native` may relay a route in the client's own
        format instead; the rest is `ServingCall`'s."""
        method = _METHOD[call.op]

        def attempt(target: Target) -> Awaitable[Reply]:
            # A route whose upstream speaks the client's own format is relayed natively.
            if native is not None:
                direct = native(target)
                if direct is not None:
                    return direct
            answer: Awaitable[Reply] = getattr(target.provider, method)(call, target)
            return answer

        served = ServingCall(
            request, principal, call.model, call.op, attempt, present, framing, call.payload, finish, admitted
        )
        return self.serving.run(served)

    async def list_models(self, request: Request, principal: Principal) -> None:
        catalog = self.gw.catalog
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": catalog.owner(name)}
            for name in catalog.listed_for(principal)
        ]
        await send_json(request.send, 200, {"object": "list", "data": data})

    async def get_model(self, request: Request, principal: Principal) -> None:
        name = request.params["model"]
        if name not in self.gw.catalog.listed_for(principal):
            message = self.gw.catalog.unknown_model(name, principal)
            raise NotFound(message, code="model_not_found", param="model")
        await send_json(
            request.send,
            200,
            {"id": name, "object": "model", "created": 0, "owned_by": self.gw.catalog.owner(name)},
        )


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = TextAPI(gw)
    return [
        Endpoint("POST", "/v1/chat/completions", api.chat, family="text", family_by_output=True),
        Endpoint("POST", "/v1/completions", api.completions, family="text"),
        Endpoint("POST", "/v1/embeddings", api.embeddings, family="text"),
        Endpoint("POST", "/v1/moderations", api.moderations, family="text"),
        # GET /v1/models and /v1/models/{model} are api/anthropic/models.py's: the paths are
        # shared by three SDKs, and it hands OpenAI clients' calls to `list_models`/`get_model`.
    ]


def chat_stream(request: ChatCompletionRequest | CompletionRequest) -> tuple[bool, bool]:
    """(stream, include usage): the usage chunk only for a stream that asks for it. (Here, not
    beside the shapes: this module is compiled, and a chat call asks it every time.)"""
    stream = bool(request.stream)
    options = request.stream_options
    return stream, bool(stream and options is not None and options.include_usage is True)
