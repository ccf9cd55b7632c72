"""A Responses API request (`POST /v1/responses`) checked and turned into the canonical chat
completions request every upstream protocol can be reached with.

`parse_request` checks the body against its declaration (`shapes/responses.py`) and sorts every
field into one of:
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
from unigate.shapes.responses import RESPONSE, ResponseReasoning, ResponseRequest, ResponseText
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


@dataclass(slots=True)
class ResponsesRequest:
    """A checked request: what the gateway needs, and the chat request minus its messages."""

    payload: Json  # as the client sent it (relayed to a native route)
    model: str
    input: Any  # `input` as sent (None: absent); typed with ids in `input_items`
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
    items: list[Json] | None = None  # `input_items`, once made

    @property
    def input_items(self) -> list[Json]:
        """`input` as typed items with ids (`normalize_input`): what is stored and listed, and
        what a translated route is sent. Made on first use: a coding agent's unstored call
        relayed to a native route (hundreds of items) never needs them."""
        if self.items is None:
            self.items = normalize_input(self.input) if self.input is not None else []
        return self.items

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
    checked = RESPONSE.check(payload)  # the declared fields' types and bounds (shapes/responses.py)
    previous = checked.previous_response_id or None
    chat: Json = {}
    stream = bool(checked.stream)
    if stream:
        # The final event carries usage, so the upstream's usage chunk is always asked for.
        chat.update(stream=True, stream_options={"include_usage": True})
    dropped = Dropped()
    names = map_tools(payload, chat, dropped)
    verbosity = _map_text(checked.text, chat)
    included = checked.include or []
    for value in included:
        if value not in _INCLUDED:
            dropped.drop(f"include.{value}")
    given = payload["input"] if checked.input is not None else None
    stored = checked.store is not False
    request = ResponsesRequest(
        payload=payload,
        model=checked.model,
        input=given,
        # A stored request's items are made now: a malformed one is refused before the call,
        # not when its answer is stored.
        items=normalize_input(given) if stored and given is not None else None,
        instructions=checked.instructions or None,
        stream=stream,
        store=stored,
        background=bool(checked.background),
        previous_response_id=previous,
        metadata=dict(checked.metadata or {}),
        chat=chat,
        names=names,
        sources=any(value in _INCLUDED for value in included),
        dropped=dropped,
    )
    _map_fields(payload, checked, request)
    if verbosity:
        request.dropped.by_protocol["text.verbosity"] = "text.verbosity"
    return request


def _map_fields(payload: Json, checked: ResponseRequest, request: ResponsesRequest) -> None:
    """The scalar fields: mapped, listed per protocol, blocked or dropped."""
    chat = request.chat
    if checked.max_output_tokens is not None:
        chat["max_completion_tokens"] = checked.max_output_tokens
    for name in ("temperature", "top_p", "user", "safety_identifier", "prompt_cache_key", "service_tier"):
        if payload.get(name) is not None:
            chat[name] = payload[name]
    if checked.parallel_tool_calls is not None and "tools" in chat:
        chat["parallel_tool_calls"] = checked.parallel_tool_calls  # OpenAI refuses it without tools
    _map_reasoning(checked.reasoning, payload.get("reasoning"), request)
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


def _meaningful(name: str, value: Any) -> bool:
    """Whether a field the translation cannot honour asks for anything (a default does not)."""
    if name == "truncation":
        return bool(value != "disabled")
    return True


def _map_reasoning(reasoning: ResponseReasoning | None, given: Any, request: ResponsesRequest) -> None:
    if reasoning is not None and reasoning.effort is not None:
        request.chat["reasoning_effort"] = reasoning.effort
        request.dropped.by_protocol["reasoning"] = "reasoning"
    if isinstance(given, dict) and (
        given.get("summary") is not None or given.get("generate_summary") is not None
    ):
        request.dropped.drop("reasoning.summary")  # a chat completion has no reasoning summary


def _map_text(text: ResponseText | None, chat: Json) -> bool:
    """Map `text.format`; True when `text.verbosity` was set (honoured per protocol)."""
    fmt = text.format if text is not None else None
    if fmt is not None and fmt.type == "json_object":
        chat["response_format"] = {"type": "json_object"}
    elif fmt is not None and fmt.type == "json_schema":
        spec: Json = {"name": fmt.name, "schema": fmt.schema}
        if fmt.strict is not None:
            spec["strict"] = fmt.strict
        if fmt.description is not None:
            spec["description"] = fmt.description
        chat["response_format"] = {"type": "json_schema", "json_schema": spec}
    if text is not None and text.verbosity is not None:
        chat["verbosity"] = text.verbosity
    return text is not None and text.verbosity is not None
