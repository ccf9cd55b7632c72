"""What the sandbox says in a chat: a reply built from the conversation, deterministically.

The text quotes the user's last message and names its key words, counts attachments,
mentions the turn number and the previous reply in a multi-turn chat, and acknowledges
system instructions, so tests can check that the gateway relayed the right conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from unigate_sandbox.conversation import Conversation, describe_attachments
from unigate_sandbox.params import invalid_type, invalid_value
from unigate_sandbox.schema_values import Budget, example_value
from unigate_sandbox.tokens import keywords, shorten

QUOTE_WORDS = 40
RESULT_WORDS = 60


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    kind: str  # text | json_object | json_schema
    schema: dict[str, Any] | None = None


def parse_response_format(payload: dict[str, Any]) -> ResponseFormat:
    raw = payload.get("response_format")
    if raw is None:
        return ResponseFormat("text")
    if not isinstance(raw, dict):
        raise invalid_type("response_format", "an object")
    kind = raw.get("type")
    if kind in ("text", "json_object"):
        return ResponseFormat(str(kind))
    if kind != "json_schema":
        raise invalid_value("response_format.type", "expected 'text', 'json_object' or 'json_schema'.")
    spec = raw.get("json_schema")
    if not isinstance(spec, dict):
        raise invalid_type("response_format.json_schema", "an object")
    schema = spec.get("schema")
    if schema is None:
        return ResponseFormat("json_object")  # a schema-less json_schema still promises JSON
    if not isinstance(schema, dict):
        raise invalid_type("response_format.json_schema.schema", "a JSON Schema object")
    return ResponseFormat("json_schema", schema)


def generates_values(payload: dict[str, Any]) -> bool:
    """Whether the reply is generated from a JSON Schema (tool arguments or a `json_schema`
    response format): bounded, but worth a worker thread."""
    fmt = payload.get("response_format")
    return bool(payload.get("tools")) or (isinstance(fmt, dict) and fmt.get("type") == "json_schema")


def content_for(
    conv: Conversation, fmt: ResponseFormat, index: int, n: int, budget: Budget | None = None
) -> str:
    """The assistant's message content for choice `index` of `n`."""
    text = tool_result_text(conv) if conv.ends_with_tool_result else reply_text(conv, index, n)
    user = conv.last_user
    if fmt.kind == "json_object":
        return orjson.dumps(
            {"reply": text, "turn": conv.user_turns, "keywords": keywords(user.text) if user else []}
        ).decode()
    if fmt.kind == "json_schema":
        return orjson.dumps(example_value(fmt.schema, user.text if user else "", budget=budget)).decode()
    return text


def reply_text(conv: Conversation, index: int, n: int) -> str:
    parts: list[str] = []
    user = conv.last_user
    if user is None:
        parts.append("Hello from the sandbox model. There is no user message to answer yet.")
    else:
        quote = shorten(user.text, QUOTE_WORDS)
        parts.append(f'You said: "{quote}".' if quote else "Your message has no text.")
        if user.attachments:
            parts.append(f"You attached {describe_attachments(user.attachments)}.")
        found = keywords(user.text)
        if found:
            parts.append(f"Key words: {', '.join(found)}.")
    turn = conv.user_turns
    if turn > 1:
        parts.append(f"This is turn {turn} of our conversation.")
        previous = conv.previous_reply
        if previous:
            parts.append(f"Earlier I said: '{shorten(previous, 10)}'.")
    if conv.instructions:
        parts.append(f"Following the instructions: '{shorten(conv.instructions, 12)}'.")
    if n > 1:
        parts.append(f"(Choice {index + 1} of {n}.)")
    return " ".join(parts)


def tool_result_text(conv: Conversation) -> str:
    parts = [
        f"The tool {r.name} returned: {shorten(r.content, RESULT_WORDS) or '(nothing)'}."
        for r in conv.trailing_tool_results()
    ]
    user = conv.last_user
    if user and user.text.strip():
        parts.append(f'That answers your request: "{shorten(user.text, 20)}".')
    return " ".join(parts)
