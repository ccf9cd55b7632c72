"""Responses API input items ⇄ OpenAI chat messages.

`normalize_input` turns a request's `input` (a string, or typed items) into the items the
gateway stores and lists (`GET /v1/responses/{id}/input_items`): every message in the typed
form with an id. `chat_messages` turns items - a stored conversation followed by the new
input - into the canonical chat `messages`.

Items a chat completion has no place for are never dropped silently: reasoning items (a
chat model cannot read another model's reasoning), item references to nothing the stored
conversation holds and hosted tools' items are left out and named in `Dropped` (a stored
conversation's reasoning, the gateway's own history, is skipped without a name). Calls of
namespaced and custom tools are sent under their upstream function names (`ToolNames`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from unigate.errors import InvalidRequest
from unigate.translate.checks import optional_string, place, wrong_type
from unigate.translate.responses_tools import ToolNames, custom_arguments
from unigate.translate.translation import Dropped

Json = dict[str, Any]

_INPUT_ROLES = frozenset({"user", "system", "developer"})
_ROLES = _INPUT_ROLES | {"assistant"}
# Item fields the gateway adds or that only the upstream that made them knows; not sent on.
_LOCAL_FIELDS = ("id", "status")
# Call items and the field holding what the model wrote; output items and their id prefixes.
_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_OUTPUTS = {"function_call_output": "fco_", "custom_tool_call_output": "ctco_"}
_CHAT_KINDS = frozenset({"message", *_CALLS, *_OUTPUTS})


class Untranslatable(InvalidRequest):
    """A request part only an upstream with its own Responses API can serve. Raised per route
    (a translated route is skipped; the client gets it when no route could take it)."""

    code = "unsupported_parameter"


def item_id(prefix: str) -> str:
    return prefix + secrets.token_hex(24)


class _Ids:
    """`item_id`s for one request's input items, drawn in one read of the system's randomness:
    a coding agent resends a conversation of a hundred items or more with each call, and a read
    per item (a system call each) cost more than the rest of the request's checks."""

    __slots__ = ("_hex", "_next")

    def __init__(self, count: int) -> None:
        self._hex = secrets.token_hex(24 * count)
        self._next = 0

    def __call__(self, prefix: str) -> str:
        start = self._next
        self._next = start + 48
        return prefix + self._hex[start : start + 48]


def normalize_input(value: Any) -> list[Json]:
    """The request's `input` as typed items, each with an id."""
    if isinstance(value, str):
        return [_message("user", [{"type": "input_text", "text": value}], item_id)]
    if not isinstance(value, list):
        raise wrong_type("input", "a string or an array of input items")
    ids = _Ids(len(value))
    return [_normalized(item, i, ids) for i, item in enumerate(value)]


def _message(role: str, content: list[Json], ids: Callable[[str], str], given_id: Any = None) -> Json:
    return {
        "id": given_id if isinstance(given_id, str) and given_id else ids("msg_"),
        "type": "message",
        "role": role,
        "content": content,
        "status": "completed",
    }


def _normalized(item: Any, i: int, ids: _Ids) -> Json:
    """Item `i` of `input`, typed, with an id. Its place is spelled out in a refusal only: an
    agent's conversation has hundreds of items."""
    if not isinstance(item, dict):
        raise wrong_type(f"input[{i}]", "an object")
    kind = item.get("type")
    if kind is None and "role" not in item and "id" in item:
        kind = "item_reference"  # the one item whose `type` is optional besides a message
    if kind is None or kind == "message":
        role = item.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            raise InvalidRequest(
                f"Invalid value for 'input[{i}].role': expected user, assistant, system or developer.",
                param=f"input[{i}].role",
                code="invalid_value",
            )
        content = _content(item.get("content"), role, i)
        return _message(role, content, ids, item.get("id"))
    if not isinstance(kind, str):
        raise wrong_type(f"input[{i}].type", "a string")
    written = _CALLS.get(kind)
    if written is not None:
        for name in ("call_id", "name", written):
            if not isinstance(item.get(name), str):
                raise wrong_type(f"input[{i}].{name}", "a string")
        namespace = item.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise wrong_type(f"input[{i}].namespace", "a string")
        return {"id": ids("fc_" if kind == "function_call" else "ctc_"), "status": "completed", **item}
    prefix = _OUTPUTS.get(kind)
    if prefix is not None:
        if not isinstance(item.get("call_id"), str):
            raise wrong_type(f"input[{i}].call_id", "a string")
        output = item.get("output")
        if not isinstance(output, str | list):
            raise wrong_type(f"input[{i}].output", "a string or an array of content parts")
        return {"id": ids(prefix), "status": "completed", **item}
    if kind == "item_reference":
        if not isinstance(item.get("id"), str) or not item["id"]:
            raise wrong_type(f"input[{i}].id", "a string")
        return {"type": kind, "id": item["id"]}
    return dict(item)  # reasoning, hosted tools' items: kept as sent


def _content(value: Any, role: str, i: int) -> list[Json]:
    """Message content (of item `i`) as typed parts (a plain string becomes one text part)."""
    if isinstance(value, str):
        if role == "assistant":
            return [{"type": "output_text", "text": value, "annotations": []}]
        return [{"type": "input_text", "text": value}]
    if not isinstance(value, list):
        raise wrong_type(f"input[{i}].content", "a string or an array of content parts")
    for j, part in enumerate(value):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise wrong_type(f"input[{i}].content[{j}]", "a content part object with a `type`")
    return list(value)


def for_upstream(items: list[Json]) -> list[Json]:
    """Stored items as input for an upstream's own Responses API: without the ids and states
    the gateway gave them, which that upstream never saw."""
    return [{k: v for k, v in item.items() if k not in _LOCAL_FIELDS} for item in items]


# ---------------------------------------------------------------- items -> chat messages


def chat_messages(history: list[Json], items: list[Json], dropped: Dropped, names: ToolNames) -> list[Json]:
    """Chat messages for a stored conversation (`history`, oldest first) and the new input
    `items`. What has no chat form is left out and named in `dropped`."""
    messages: list[Json] = []
    shown: list[Json] = []  # images tool outputs returned, for a user message after the results
    for i, item in enumerate(history):
        kind = item.get("type")
        if kind not in _CHAT_KINDS:
            if kind != "reasoning":
                dropped.drop(f"history.{kind}")
            continue
        _append(messages, item, "previous_response_id[{}]", i, names, shown)
    known = {item["id"]: item for item in history if isinstance(item.get("id"), str)}
    for i, item in enumerate(items):
        if item.get("type") == "item_reference":
            found = known.get(item["id"])
            if found is None:  # an item of a conversation the gateway does not hold
                dropped.drop("input.item_reference")
                continue
            item = found
        kind = item.get("type", "message")
        if kind in _CHAT_KINDS:
            _append(messages, item, "input[{}]", i, names, shown)
        elif kind in ("reasoning", "web_search_call"):
            # Another model's reasoning, a search already reflected in the answer after it.
            dropped.drop(f"input.{kind}")
        else:  # a hosted tool's call or output: no chat form, nothing here can run it
            dropped.tool(str(kind), f"input[{i}]", f"input.{kind}")
    _show(messages, shown)
    return messages


def _show(messages: list[Json], shown: list[Json]) -> None:
    """A chat tool result holds text only: the images tool outputs returned (a screenshot, a
    file viewed) follow the results as a user message, so every upstream sees them."""
    if shown:
        messages.append({"role": "user", "content": [*shown]})
        shown.clear()


def _append(
    messages: list[Json], item: Json, where: str, i: int, names: ToolNames, shown: list[Json]
) -> None:
    """Item `i` (its place: the template `where`) onto the chat messages."""
    kind = item.get("type", "message")
    if kind not in _OUTPUTS:
        _show(messages, shown)  # the results of one turn's calls stay together
    if kind == "message":
        _append_message(messages, item, where, i)
    elif kind in _CALLS:
        custom = kind == "custom_tool_call"
        upstream = names.upstream(item["name"], item.get("namespace"), custom)
        arguments = custom_arguments(item["input"]) if custom else item["arguments"]
        fn = {"name": upstream, "arguments": arguments}
        call = {"id": item["call_id"], "type": "function", "function": fn}
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant":
            # The text and the (parallel) calls that follow it are one assistant turn.
            last.setdefault("tool_calls", []).append(call)
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    else:  # an output
        content = _tool_output(item["output"], where + ".output", i, shown)
        messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": content})


def _append_message(messages: list[Json], item: Json, where: str, i: int) -> None:
    role = item["role"]
    parts = item["content"]
    if role == "assistant":
        texts: list[str] = []
        for j, part in enumerate(parts):
            if part.get("type") in ("output_text", "input_text", "refusal"):
                text = part.get("text", part.get("refusal"))
                if not isinstance(text, str):
                    raise wrong_type(place(where + ".content[{}].text", (i, j)), "a string")
                texts.append(text)
            else:
                raise Untranslatable(
                    f"Assistant content of type '{part.get('type')}' has no chat form.",
                    param=place(where + ".content[{}].type", (i, j)),
                )
        messages.append({"role": "assistant", "content": "".join(texts)})
        return
    inner = where + ".content[{}]"
    chat_parts = [_chat_part(part, role, inner, i, j) for j, part in enumerate(parts)]
    if all(p["type"] == "text" for p in chat_parts):
        # Plain text is sent as a string: every translator (and upstream) takes that form.
        messages.append({"role": role, "content": "\n".join(p["text"] for p in chat_parts)})
    else:
        messages.append({"role": role, "content": chat_parts})


def _chat_part(part: Json, role: str, template: str, *at: object) -> Json:
    """A content part as a chat one; its place is the template filled with `at` (spelled out
    only past the text parts an agent sends hundreds of)."""
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        text = part.get("text")
        if not isinstance(text, str):
            raise wrong_type(place(template + ".text", at), "a string")
        return {"type": "text", "text": text}
    where = place(template, at)
    if role != "user":
        raise InvalidRequest(f"Only text parts are allowed in {role} messages.", param=where)
    if kind == "input_image":
        url = optional_string(part.get("image_url"), f"{where}.image_url")
        if not url:
            raise Untranslatable(
                "Images given by `file_id` need an upstream with its own Responses API; send an "
                "`image_url` (https or data URL) instead.",
                param=where,
            )
        image: Json = {"url": url}
        detail = optional_string(part.get("detail"), f"{where}.detail")
        if detail is not None:
            image["detail"] = detail
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        file: Json = {}
        for name in ("file_data", "file_id", "filename"):
            value = optional_string(part.get(name), f"{where}.{name}")
            if value is not None:
                file[name] = value
        if "file_data" not in file and "file_id" not in file:
            raise Untranslatable("Files given by `file_url` have no chat form.", param=where)
        return {"type": "file", "file": file}
    if kind == "input_audio":
        return {"type": "input_audio", "input_audio": part.get("input_audio")}
    raise Untranslatable(f"Content parts of type '{kind}' have no chat form.", param=f"{where}.type")


def _tool_output(output: str | list[Any], where: str, i: int, shown: list[Json]) -> str:
    """The text of a tool's output (item `i`'s, at the template `where`); its images and files
    go to `shown`."""
    if isinstance(output, str):
        return output
    texts: list[str] = []
    inner = where + "[{}]"
    for j, part in enumerate(output):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise wrong_type(place(inner, (i, j)), "a content part object with a `type`")
        chat = _chat_part(part, "user", inner, i, j)
        if chat["type"] == "text":
            texts.append(chat["text"])
        else:
            shown.append(chat)
    return "\n".join(texts)
