"""A Responses API request (`POST /v1/responses`) checked and turned into the canonical chat
completions request every upstream protocol can be reached with.

`parse_request` validates the fields the gateway reads and sorts every field into one of:
handled by the gateway itself (`store`, `metadata`, `previous_response_id`, `background`,
`stream`), mapped onto the chat request (tools: `responses_tools`), honoured only by some
upstream protocols (listed in `x-unigate-dropped-fields` for the others), needing an upstream
with its own Responses API (`conversation`, `prompt`: state held by OpenAI, so a translated
route refuses them with a 400 naming them), or dropped on every translated route (listed in
the header; hosted tools without an equivalent among them, which `hosted_tools: reject`
refuses instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unigate.errors import InvalidRequest
from unigate.translate.checks import (
    optional_number,
    optional_object,
    optional_string,
    string_list,
    wrong_type,
)
from unigate.translate.responses_items import Untranslatable, chat_messages, normalize_input
from unigate.translate.responses_tools import ToolNames, map_tools
from unigate.translate.translation import Dropped

Json = dict[str, Any]

# Read by the gateway itself; never sent to an upstream as such.
_GATEWAY = frozenset(
    {"model", "input", "instructions", "stream", "stream_options", "store", "metadata",
     "previous_response_id", "background"}
)  # fmt: skip
# Mapped onto the chat request and honoured on every route (`include`: the values it can).
_MAPPED = frozenset({"tools", "tool_choice", "text", "max_output_tokens", "include"})
# `include` values a translated route honours: a web search call's sources.
_INCLUDED = frozenset({"web_search_call.action.sources", "web_search_call.results"})
# Mapped onto the chat request; whether the upstream honours them depends on its protocol.
_BY_PROTOCOL = frozenset(
    {"temperature", "top_p", "reasoning", "parallel_tool_calls", "user", "safety_identifier",
     "prompt_cache_key", "service_tier"}
)  # fmt: skip
# Fields only an upstream with its own Responses API can serve (state held by OpenAI).
_NATIVE_ONLY = frozenset({"conversation", "prompt"})
_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})


@dataclass(slots=True)
class ResponsesRequest:
    """A checked request: what the gateway needs, and the chat request minus its messages."""

    payload: Json  # as the client sent it (relayed to a native route)
    model: str
    input_items: list[Json]  # normalized, with ids: stored and listed
    instructions: str | None
    stream: bool
    store: bool
    background: bool
    previous_response_id: str | None
    metadata: dict[str, str]
    chat: Json  # the canonical request's fields but `messages`
    names: ToolNames = field(default_factory=ToolNames)  # upstream function names -> client tools
    sources: bool = False  # `include` asks for a web search call's sources
    blocked: Untranslatable | None = None  # why a translated route cannot serve it
    dropped: Dropped = field(default_factory=Dropped)  # left out on translated routes

    def canonical(self, history: list[Json]) -> Json:
        """The chat request for this input after a stored conversation (oldest item first).
        Raises `Untranslatable` for what only a native route can take."""
        if self.blocked is not None:
            raise self.blocked
        messages = chat_messages(history, self.input_items, self.dropped, self.names)
        if self.instructions:
            messages.insert(0, {"role": "system", "content": self.instructions})
        if not messages:
            raise InvalidRequest("The request has no input to answer.", param="input")
        return {"model": self.model, "messages": messages, **self.chat}

    def dropped_for(self, protocol: str) -> list[str]:
        """Fields set in the request that a translated route of `protocol` cannot honour."""
        return self.dropped.dropped_for(protocol)


def parse_request(payload: Json) -> ResponsesRequest:
    model = payload.get("model")
    if model is None:
        raise _missing("model")
    if not isinstance(model, str) or not model:
        raise wrong_type("model", "a non-empty string")
    flags = {name: _flag(payload, name, default) for name, default in
             (("stream", False), ("store", True), ("background", False))}  # fmt: skip
    previous = optional_string(payload.get("previous_response_id"), "previous_response_id") or None
    instructions = optional_string(payload.get("instructions"), "instructions")
    value = payload.get("input")
    blocked: Untranslatable | None = None
    if value is None:
        if not any(payload.get(name) is not None for name in _NATIVE_ONLY) and previous is None:
            raise _missing("input")
        items: list[Json] = []
    else:
        items = normalize_input(value)
    chat: Json = {}
    if flags["stream"]:
        # The final event carries usage, so the upstream's usage chunk is always asked for.
        chat.update(stream=True, stream_options={"include_usage": True})
    dropped = Dropped()
    names = map_tools(payload, chat, dropped)
    verbosity = _map_text(optional_object(payload.get("text"), "text"), chat)
    included = string_list(payload.get("include"), "include")
    for value in included:
        if value not in _INCLUDED:
            dropped.drop(f"include.{value}")
    request = ResponsesRequest(
        payload=payload,
        model=model,
        input_items=items,
        instructions=instructions or None,
        stream=flags["stream"],
        store=flags["store"],
        background=flags["background"],
        previous_response_id=previous,
        metadata=_metadata(payload.get("metadata")),
        chat=chat,
        names=names,
        sources=any(value in _INCLUDED for value in included),
        blocked=blocked,
        dropped=dropped,
    )
    _map_fields(payload, request)
    if verbosity:
        request.dropped.by_protocol["text.verbosity"] = "text.verbosity"
    return request


def _missing(param: str) -> InvalidRequest:
    return InvalidRequest(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


def _flag(payload: Json, name: str, default: bool) -> bool:
    value = payload.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise wrong_type(name, "a boolean")
    return value


def _metadata(value: Any) -> dict[str, str]:
    data = optional_object(value, "metadata")
    if len(data) > 16:
        raise InvalidRequest("'metadata' holds at most 16 keys.", param="metadata", code="invalid_value")
    for key, text in data.items():
        if len(key) > 64 or not isinstance(text, str) or len(text) > 512:
            raise InvalidRequest(
                "'metadata' keys are at most 64 characters and values strings of at most 512.",
                param=f"metadata.{key[:64]}",
                code="invalid_value",
            )
    return dict(data)


def _map_fields(payload: Json, request: ResponsesRequest) -> None:
    """The scalar fields: mapped, listed per protocol, blocked or dropped."""
    chat = request.chat
    limit = optional_number(payload.get("max_output_tokens"), "max_output_tokens", integer=True)
    if limit is not None:
        if limit < 1:
            raise InvalidRequest("'max_output_tokens' must be at least 1.", param="max_output_tokens")
        chat["max_completion_tokens"] = limit
    for name in ("temperature", "top_p"):
        if optional_number(payload.get(name), name) is not None:
            chat[name] = payload[name]
    for name in ("user", "safety_identifier", "prompt_cache_key", "service_tier"):
        if optional_string(payload.get(name), name) is not None:
            chat[name] = payload[name]
    parallel = payload.get("parallel_tool_calls")
    if parallel is not None:
        if not isinstance(parallel, bool):
            raise wrong_type("parallel_tool_calls", "a boolean")
        if "tools" in chat:  # OpenAI refuses the flag on a request without tools
            chat["parallel_tool_calls"] = parallel
    _map_reasoning(optional_object(payload.get("reasoning"), "reasoning"), request)
    _check_unmapped(payload)
    for name, value in payload.items():
        if value is None or name in _GATEWAY or name in _MAPPED or name == "reasoning":
            continue
        if name in _BY_PROTOCOL:
            request.dropped.by_protocol[name] = name
        elif name in _NATIVE_ONLY:
            request.blocked = request.blocked or Untranslatable(
                f"'{name}' refers to state held by OpenAI; this model's route translates to chat "
                "completions, which has none.",
                param=name,
            )
        elif _meaningful(name, value):
            request.dropped.drop(name)


def _check_unmapped(payload: Json) -> None:
    """Fields no translation maps (dropped and named, or read by no upstream) but whose type
    every route would refuse: a 400 here, not a 200 that silently ignored them (`include` is
    checked where its values are read)."""
    optional_object(payload.get("stream_options"), "stream_options")
    optional_string(payload.get("truncation"), "truncation")


def _meaningful(name: str, value: Any) -> bool:
    """Whether a field the translation cannot honour asks for anything (a default does not)."""
    if name == "truncation":
        return bool(value != "disabled")
    return True


def _map_reasoning(reasoning: Json, request: ResponsesRequest) -> None:
    effort = reasoning.get("effort")
    if effort is not None:
        if not isinstance(effort, str) or effort not in _EFFORTS:
            raise InvalidRequest(
                f"Invalid value for 'reasoning.effort': expected one of {', '.join(sorted(_EFFORTS))}.",
                param="reasoning.effort",
                code="invalid_value",
            )
        request.chat["reasoning_effort"] = effort
        request.dropped.by_protocol["reasoning"] = "reasoning"
    if reasoning.get("summary") is not None or reasoning.get("generate_summary") is not None:
        request.dropped.drop("reasoning.summary")  # a chat completion has no reasoning summary


def _map_text(text: Json, chat: Json) -> bool:
    """Map `text.format`; True when `text.verbosity` was set (honoured per protocol)."""
    fmt = optional_object(text.get("format"), "text.format")
    kind = fmt.get("type")
    # Typed whatever the format: a wrong `schema` beside `type: text` is a mistake too.
    name = optional_string(fmt.get("name"), "text.format.name")
    schema = fmt.get("schema")
    if schema is not None and not isinstance(schema, dict):
        raise wrong_type("text.format.schema", "a JSON Schema object")
    if kind == "json_object":
        chat["response_format"] = {"type": "json_object"}
    elif kind == "json_schema":
        if not name:
            raise InvalidRequest("'text.format.name' is required for json_schema.", param="text.format.name")
        if schema is None:
            raise wrong_type("text.format.schema", "a JSON Schema object")
        spec: Json = {"name": name, "schema": schema}
        for key in ("strict", "description"):
            if fmt.get(key) is not None:
                spec[key] = fmt[key]
        chat["response_format"] = {"type": "json_schema", "json_schema": spec}
    elif kind not in (None, "text"):
        raise InvalidRequest(
            "Invalid value for 'text.format.type': expected text, json_object or json_schema.",
            param="text.format.type",
            code="invalid_value",
        )
    verbosity = optional_string(text.get("verbosity"), "text.verbosity")
    if verbosity is not None:
        chat["verbosity"] = verbosity
    return verbosity is not None
