"""Text family (OpenAI format): chat completions, completions, embeddings, moderations, models.

The router validates only what routing and accounting need plus the required fields, so a
malformed request gets a clear 400 here; everything else is the upstream's to judge.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from unigate.api.serving.output_family import chat_outputs, require
from unigate.api.serving.relay import OPENAI_FRAMING, Framing
from unigate.api.serving.serve import Admitted, Finish, Serving, ServingCall
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway
from unigate.providers.base import Provider, Reply, Target, TextCall

_INVOKE: dict[str, Callable[[Provider], Callable[[TextCall, Target], Awaitable[Reply]]]] = {
    "chat": lambda p: p.chat,
    "completions": lambda p: p.complete,
    "embeddings": lambda p: p.embed,
    "moderations": lambda p: p.moderate,
}
MODERATION_MODEL = "omni-moderation-latest"  # OpenAI's, for a moderation request naming none
# A model id in `GET /v1/models/{model}`: anything but a Gemini action path (`x:generateContent`
# and the like are POST-only, so a GET there is a 405 with `Allow: POST`). Fine-tuned OpenAI ids
# have colons (`ft:gpt-4o-mini:org::id`), so a colon alone cannot be refused.
_GEMINI_ACTIONS = (
    "generateContent|streamGenerateContent|countTokens|embedContent|batchEmbedContents|predictLongRunning"
)
MODEL_PARAM = rf"(?![^/]*:(?:{_GEMINI_ACTIONS})$)[^/]+"
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _missing(param: str) -> InvalidRequest:
    return InvalidRequest(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


def _wrong_type(param: str, expected: str) -> InvalidRequest:
    return InvalidRequest(
        f"Invalid type for '{param}': expected {expected}.", param=param, code="invalid_type"
    )


def _model(payload: dict[str, Any]) -> str:
    model = payload.get("model")
    if model is None:
        raise _missing("model")
    if not isinstance(model, str) or not model:
        raise _wrong_type("model", "a non-empty string")
    return model


def _stream_flags(payload: dict[str, Any]) -> tuple[bool, bool]:
    stream = payload.get("stream")
    options = payload.get("stream_options")
    if options is not None and type(options) is not dict:  # checked with or without `stream`
        raise _wrong_type("stream_options", "an object")
    if stream is None:
        return False, False
    if not isinstance(stream, bool):
        raise _wrong_type("stream", "a boolean")
    return stream, bool(stream and options and options.get("include_usage") is True)


_TYPED_FIELDS = (
    ("tools", list, "an array"),
    ("max_tokens", int, "an integer"),
    ("max_completion_tokens", int, "an integer"),
    ("n", int, "an integer"),
)


def _check_messages(payload: dict[str, Any]) -> None:
    messages = payload.get("messages")
    if messages is None:
        raise _missing("messages")
    if type(messages) is not list:
        raise _wrong_type("messages", "an array")
    if not messages:
        raise InvalidRequest("'messages' must contain at least one message.", param="messages")
    for i, msg in enumerate(messages):
        if type(msg) is not dict:
            raise _wrong_type(f"messages[{i}]", "an object")
        try:
            bad_role = msg.get("role") not in _ROLES
        except TypeError:  # an object or array: unhashable (a try costs nothing until it raises)
            bad_role = True
        if bad_role:
            raise InvalidRequest(f"Invalid value for 'messages[{i}].role'.", param=f"messages[{i}].role")
        content = msg.get("content")
        if content is not None and type(content) is not str and type(content) is not list:
            raise _wrong_type(f"messages[{i}].content", "a string or an array of content parts")
    if len(payload) > 2:  # only model + messages: nothing else to check
        for name, kind, label in _TYPED_FIELDS:
            value = payload.get(name)
            if value is not None and (type(value) is not kind):
                raise _wrong_type(name, label)
        temperature = payload.get("temperature")
        if temperature is not None and type(temperature) not in (int, float):
            raise _wrong_type("temperature", "a number")


def _check_moderation_input(payload: dict[str, Any]) -> None:
    """`input`: a string, an array of strings, or an array of `text` and `image_url` parts."""
    value = payload.get("input")
    if value is None:
        raise _missing("input")
    if type(value) is str:
        return
    if type(value) is not list:
        raise _wrong_type("input", "a string or an array")
    if not value:
        raise InvalidRequest("'input' must not be empty.", param="input", code="invalid_value")
    if all(type(v) is str for v in value):
        return
    for i, part in enumerate(value):
        where = f"input[{i}]"
        if type(part) is not dict:
            raise _wrong_type(where, "an object (a text or image_url part) in an array of parts")
        kind = part.get("type")
        if kind == "text":
            if type(part.get("text")) is not str:
                raise _wrong_type(f"{where}.text", "a string")
        elif kind == "image_url":
            image = part.get("image_url")
            if type(image) is not dict or type(image.get("url")) is not str or not image["url"]:
                raise _wrong_type(f"{where}.image_url", "an object with a 'url' string")
        else:
            raise InvalidRequest(
                f"Invalid value for '{where}.type': expected 'text' or 'image_url'.",
                param=f"{where}.type",
                code="invalid_value",
            )


class TextAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.limit = gw.config.limits.max_json_body
        self.serving = Serving(gw)

    async def chat(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        model = _model(payload)
        _check_messages(payload)
        if principal.families:  # a limited key: audio output needs `audio`
            require(principal, chat_outputs(payload))
        stream, usage = _stream_flags(payload)
        await self.serve(request, principal, TextCall("chat", raw, payload, model, stream, usage))

    async def completions(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        model = _model(payload)
        prompt = payload.get("prompt")
        if prompt is None:
            raise _missing("prompt")
        if not isinstance(prompt, str | list):
            raise _wrong_type("prompt", "a string or an array")
        stream, usage = _stream_flags(payload)
        await self.serve(request, principal, TextCall("completions", raw, payload, model, stream, usage))

    async def embeddings(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        model = _model(payload)
        value = payload.get("input")
        if value is None:
            raise _missing("input")
        if not isinstance(value, str | list):
            raise _wrong_type("input", "a string or an array")
        await self.serve(request, principal, TextCall("embeddings", raw, payload, model))

    async def moderations(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        model = _model(payload) if "model" in payload else MODERATION_MODEL
        _check_moderation_input(payload)
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
        invoke = _INVOKE[call.op]

        def attempt(target: Target) -> Awaitable[Reply]:
            # A route whose upstream speaks the client's own format is relayed natively.
            direct = native(target) if native is not None else None
            return direct if direct is not None else invoke(target.provider)(call, target)

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
            raise NotFound(f"The model '{name}' does not exist.", code="model_not_found", param="model")
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
