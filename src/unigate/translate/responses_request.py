"""A Responses API request (`POST /v1/responses`) checked and turned into the canonical chat
completions request every upstream protocol can be reached with.

`parse_request` validates the fields the gateway reads and sorts every field into one of:
handled by the gateway itself (`store`, `metadata`, `previous_response_id`, `background`,
`stream`), mapped onto the chat request, honoured only by some upstream protocols (listed in
`x-unigate-dropped-fields` for the others), needing an upstream with its own Responses API
(hosted tools, `conversation`, `prompt`: a translated route refuses them with a 400 naming
them), or dropped on every translated route (listed in the header).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unigate.errors import InvalidRequest
from unigate.translate.checks import (
    optional_array,
    optional_number,
    optional_object,
    optional_string,
    wrong_type,
)
from unigate.translate.responses_items import Untranslatable, chat_messages, normalize_input

Json = dict[str, Any]

# Read by the gateway itself; never sent to an upstream as such.
_GATEWAY = frozenset(
    {"model", "input", "instructions", "stream", "stream_options", "store", "metadata",
     "previous_response_id", "background"}
)  # fmt: skip
# Mapped onto the chat request and honoured on every route.
_MAPPED = frozenset({"tools", "tool_choice", "text", "max_output_tokens"})
# Mapped onto the chat request; whether the upstream honours them depends on its protocol.
_BY_PROTOCOL = frozenset(
    {"temperature", "top_p", "reasoning", "parallel_tool_calls", "user", "safety_identifier",
     "prompt_cache_key", "service_tier"}
)  # fmt: skip
# Fields only an upstream with its own Responses API can serve (state held by OpenAI).
_NATIVE_ONLY = frozenset({"conversation", "prompt"})
# What each protocol's translation keeps of `_BY_PROTOCOL` (and `text.verbosity`); a protocol
# not named here speaks OpenAI's chat format, which has them all.
HONOURED: dict[str, frozenset[str]] = {
    "anthropic": frozenset({"temperature", "top_p", "parallel_tool_calls", "user"}),
    "gemini": frozenset({"temperature", "top_p"}),
    "sandbox": frozenset({"parallel_tool_calls"}),
}
_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
_CHOICES = frozenset({"auto", "none", "required"})


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
    blocked: Untranslatable | None = None  # why a translated route cannot serve it
    dropped: list[str] = field(default_factory=list)  # dropped on every translated route
    by_protocol: list[str] = field(default_factory=list)  # set fields some protocols drop

    def canonical(self, history: list[Json]) -> Json:
        """The chat request for this input after a stored conversation (oldest item first).
        Raises `Untranslatable` for what only a native route can take."""
        if self.blocked is not None:
            raise self.blocked
        skipped: list[str] = []
        messages = chat_messages(history, self.input_items, skipped)
        self.dropped.extend(s for s in skipped if s not in self.dropped)
        if self.instructions:
            messages.insert(0, {"role": "system", "content": self.instructions})
        if not messages:
            raise InvalidRequest("The request has no input to answer.", param="input")
        return {"model": self.model, "messages": messages, **self.chat}

    def dropped_for(self, protocol: str) -> list[str]:
        """Fields set in the request that a translated route of `protocol` cannot honour."""
        honoured = HONOURED.get(protocol)
        extra = [] if honoured is None else [f for f in self.by_protocol if f not in honoured]
        return sorted({*self.dropped, *extra})


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
    try:
        _map_tools(payload, chat)
    except Untranslatable as exc:
        blocked = exc
    verbosity = _map_text(optional_object(payload.get("text"), "text"), chat)
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
        blocked=blocked,
    )
    _map_fields(payload, request)
    if verbosity:
        request.by_protocol.append("text.verbosity")
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
            request.by_protocol.append(name)
        elif name in _NATIVE_ONLY:
            request.blocked = request.blocked or Untranslatable(
                f"'{name}' refers to state held by OpenAI; this model's route translates to chat "
                "completions, which has none.",
                param=name,
            )
        elif _meaningful(name, value):
            request.dropped.append(name)


def _check_unmapped(payload: Json) -> None:
    """Fields no translation maps (dropped and named, or read by no upstream) but whose type
    every route would refuse: a 400 here, not a 200 that silently ignored them."""
    optional_object(payload.get("stream_options"), "stream_options")
    optional_string(payload.get("truncation"), "truncation")
    for i, item in enumerate(optional_array(payload.get("include"), "include")):
        optional_string(item, f"include[{i}]")


def _meaningful(name: str, value: Any) -> bool:
    """Whether a field the translation cannot honour asks for anything (a default does not)."""
    if name == "truncation":
        return bool(value != "disabled")
    if name == "include":
        return bool(value)
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
        request.by_protocol.append("reasoning")
    if reasoning.get("summary") is not None or reasoning.get("generate_summary") is not None:
        request.dropped.append("reasoning.summary")  # a chat completion has no reasoning summary


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


def _map_tools(payload: Json, chat: Json) -> None:
    tools = optional_array(payload.get("tools"), "tools")
    mapped = [_tool(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    if mapped:
        chat["tools"] = mapped
    choice = payload.get("tool_choice")
    if choice is not None:
        chat["tool_choice"] = _tool_choice(choice)


def _tool(tool: Any, where: str) -> Json:
    if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
        raise wrong_type(where, "a tool object with a `type`")
    kind = tool["type"]
    if kind != "function":
        raise Untranslatable(
            f"The '{kind}' tool is hosted by OpenAI and this model's route translates to chat "
            "completions, which cannot run it; only 'function' tools work here.",
            param=f"{where}.type",
            code="unsupported_tool",
        )
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise _missing(f"{where}.name")
    fn: Json = {"name": name}
    description = optional_string(tool.get("description"), f"{where}.description")
    if description is not None:
        fn["description"] = description
    parameters = optional_object(tool.get("parameters"), f"{where}.parameters")
    if parameters:
        fn["parameters"] = parameters
    if tool.get("strict") is not None:
        fn["strict"] = tool["strict"]
    return {"type": "function", "function": fn}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str):
        if choice not in _CHOICES:
            raise InvalidRequest(
                "Invalid value for 'tool_choice': expected auto, none or required.",
                param="tool_choice",
                code="invalid_value",
            )
        return choice
    if not isinstance(choice, dict):
        raise wrong_type("tool_choice", "a string or an object")
    kind = choice.get("type")
    if kind == "function":
        return {"type": "function", "function": {"name": _function_name(choice, "tool_choice")}}
    if kind == "allowed_tools":
        listed = optional_array(choice.get("tools"), "tool_choice.tools")
        names = [_function_name(t, f"tool_choice.tools[{i}]") for i, t in enumerate(listed)]
        mode = choice.get("mode", "auto")
        if mode not in ("auto", "required"):
            raise InvalidRequest(
                "Invalid value for 'tool_choice.mode': expected auto or required.",
                param="tool_choice.mode",
                code="invalid_value",
            )
        spec = {"mode": mode, "tools": [{"type": "function", "function": {"name": n}} for n in names]}
        return {"type": "allowed_tools", "allowed_tools": spec}
    raise Untranslatable(
        f"tool_choice '{kind}' names a tool hosted by OpenAI, which this model's route cannot run.",
        param="tool_choice",
        code="unsupported_tool",
    )


def _function_name(entry: Any, where: str) -> str:
    if not isinstance(entry, dict):
        raise wrong_type(where, "an object")
    if entry.get("type") != "function":
        raise Untranslatable(
            f"'{where}' names a '{entry.get('type')}' tool, hosted by OpenAI; only function tools work here.",
            param=where,
            code="unsupported_tool",
        )
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise wrong_type(f"{where}.name", "a string")
    return name
