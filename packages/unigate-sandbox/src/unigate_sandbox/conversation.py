"""The `messages` of a chat request, validated and reduced to what the sandbox answers from:
the text of each turn, its attachments, and the tool calls and results exchanged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from unigate.translate.checks import is_base64
from unigate_sandbox.params import invalid_type, invalid_value

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_PART_NAMES: Mapping[str, str] = MappingProxyType(
    {"image_url": "image", "input_audio": "audio clip", "file": "file"}
)


@dataclass(frozen=True, slots=True)
class PastToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    text: str
    attachments: tuple[tuple[str, int], ...] = ()  # (kind, count), e.g. ("image", 2)
    tool_calls: tuple[PastToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    name: str
    content: str


@dataclass(frozen=True, slots=True)
class Conversation:
    messages: tuple[Message, ...]

    @property
    def last_user(self) -> Message | None:
        return next((m for m in reversed(self.messages) if m.role == "user"), None)

    @property
    def user_turns(self) -> int:
        return sum(1 for m in self.messages if m.role == "user")

    @property
    def instructions(self) -> str:
        return " ".join(m.text for m in self.messages if m.role in ("system", "developer") and m.text)

    @property
    def previous_reply(self) -> str | None:
        """The text of the latest assistant message, if it said anything."""
        for m in reversed(self.messages):
            if m.role == "assistant" and m.text:
                return m.text
        return None

    @property
    def ends_with_tool_result(self) -> bool:
        return bool(self.messages) and self.messages[-1].role in ("tool", "function")

    def trailing_tool_results(self) -> list[ToolResult]:
        """The tool results after the last assistant turn, named after the calls they answer."""
        names = {c.id: c.name for m in self.messages for c in m.tool_calls}
        out: list[ToolResult] = []
        for m in reversed(self.messages):
            if m.role not in ("tool", "function"):
                break
            out.append(ToolResult(names.get(m.tool_call_id or "", m.tool_call_id or "tool"), m.text))
        return out[::-1]


def parse_conversation(payload: dict[str, Any]) -> Conversation:
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid_type("messages", "a non-empty array of messages")
    return Conversation(tuple(_message(m, f"messages[{i}]") for i, m in enumerate(messages)))


def _message(raw: object, where: str) -> Message:
    if not isinstance(raw, dict):
        raise invalid_type(where, "an object")
    role = raw.get("role")
    if role not in ROLES:
        raise invalid_value(f"{where}.role", f"expected one of {', '.join(sorted(ROLES))}.")
    content = raw.get("content")
    if content is None and role in ("user", "system", "developer", "tool"):
        raise invalid_type(f"{where}.content", "a string or an array of content parts")
    text, attachments = _content(content, f"{where}.content")
    tool_calls = _past_tool_calls(raw.get("tool_calls"), f"{where}.tool_calls") if role == "assistant" else ()
    call_id: str | None = None
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str):
            raise invalid_type(f"{where}.tool_call_id", "a string")
    elif role == "function":
        name = raw.get("name")
        call_id = name if isinstance(name, str) else None
    return Message(str(role), text, attachments, tool_calls, call_id)


def _content(content: object, where: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    """The text of a message and a count of its non-text parts by kind."""
    if content is None:
        return "", ()
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise invalid_type(where, "a string or an array of content parts")
    texts: list[str] = []
    kinds: Counter[str] = Counter()
    for i, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise invalid_type(f"{where}[{i}]", "a content part object with a 'type'")
        kind = part["type"]
        if kind == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise invalid_type(f"{where}[{i}].text", "a string")
            texts.append(text)
        elif kind == "refusal":
            texts.append(str(part.get("refusal") or ""))
        elif kind == "image_url":
            _check_image_url(part.get("image_url"), f"{where}[{i}].image_url")
            kinds["image"] += 1
        else:
            kinds[_PART_NAMES.get(kind, kind.replace("_", " "))] += 1
    return "\n".join(texts), tuple(kinds.items())  # in order of first appearance


def _check_image_url(value: object, where: str) -> None:
    """As OpenAI checks it: {"url": an http(s) URL or a base64 data URL}."""
    url = value.get("url") if isinstance(value, dict) else None
    if not isinstance(url, str):
        raise invalid_type(f"{where}.url", "a string")
    if url.startswith("data:"):
        header, comma, data = url[5:].partition(",")
        if comma and header.endswith(";base64") and is_base64(data):
            return
    elif url.startswith(("http://", "https://")):
        return
    raise invalid_value(f"{where}.url", "expected an http(s) URL or a base64 data: URL.")


def _past_tool_calls(raw: object, where: str) -> tuple[PastToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise invalid_type(where, "an array")
    calls: list[PastToolCall] = []
    for i, call in enumerate(raw):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise invalid_type(f"{where}[{i}]", "a function tool call with a name")
        arguments = fn.get("arguments", "")
        if not isinstance(arguments, str):
            raise invalid_type(f"{where}[{i}].function.arguments", "a JSON string")
        call_id = call.get("id")
        calls.append(PastToolCall(call_id if isinstance(call_id, str) else "", fn["name"], arguments))
    return tuple(calls)


def describe_attachments(attachments: tuple[tuple[str, int], ...]) -> str:
    """("image", 2), ("file", 1) -> "2 images and 1 file"."""
    items = [f"{count} {kind}{'' if count == 1 else 's'}" for kind, count in attachments]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
