"""Anthropic's Messages and token-count bodies (`api/anthropic/messages.py`).

Checked by the declaration on every call: what routing and accounting read (`model`,
`max_tokens`, `stream`) and that `messages` is there. The conversation itself (`messages`,
`system`, `tools`) is relayed unread to an Anthropic upstream and checked by the translator
(`translate/anthropic_inbound.py`) only when a route translates it, so a same-format relay is
never re-validated; its schema is therefore stated here by hand (`extra_json_schema`), since a
typed declaration would be a check on every call."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from unigate.shapes.declare import Body, Shape

_BLOCK = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "description": "text, image, document, tool_use, tool_result, …"}
    },
    "required": ["type"],
}
_BLOCKS = {"type": "array", "items": _BLOCK}
_MESSAGES = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "properties": {
            "role": {"enum": ["user", "assistant", "system"]},
            "content": {"anyOf": [{"type": "string"}, _BLOCKS]},
        },
        "required": ["role", "content"],
    },
}
_SYSTEM = {"anyOf": [{"type": "string"}, _BLOCKS, {"type": "null"}]}
_TOOLS = {"type": ["array", "null"], "items": {"type": "object"}}


class AnthropicCountTokensRequest(Body):
    model: Annotated[
        str, Meta(min_length=1, description="A model id the key may use.", extra={"expected": "a model id"})
    ]
    messages: Annotated[Any, Meta(extra_json_schema=_MESSAGES)]
    system: Annotated[Any, Meta(extra_json_schema=_SYSTEM)] = None
    tools: Annotated[Any, Meta(extra_json_schema=_TOOLS)] = None


class AnthropicMessageRequest(AnthropicCountTokensRequest, kw_only=True):
    """Anthropic's Messages request; fields not listed are relayed or translated as the upstream
    takes them."""

    max_tokens: Annotated[int, Meta(ge=1, description="The most tokens to generate.")]
    stream: bool | None = None


MESSAGES = Shape(AnthropicMessageRequest)
COUNT_TOKENS = Shape(AnthropicCountTokensRequest)
