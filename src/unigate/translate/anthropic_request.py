"""Request bodies: OpenAI chat completions ⇄ Anthropic Messages.

Both functions take an already-parsed JSON object and return a new one; input is never mutated.
Anything with no faithful equivalent on the other side raises `InvalidRequest` rather than being
silently dropped, except sampling knobs that only tune quality (`top_k`, `seed`, penalties).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from unigate.errors import InvalidRequest
from unigate.translate import anthropic_search, web_search
from unigate.translate.anthropic_response import as_object
from unigate.translate.checks import (
    base64_text,
    optional_array,
    optional_number,
    optional_object,
    optional_string,
    string_list,
    wrong_type,
)
from unigate.translate.dropped import Dropped

# Anthropic requires `max_tokens`; OpenAI lets the model decide. 4096 is accepted by every
# current Claude model and long enough for ordinary chat replies.
DEFAULT_MAX_TOKENS = 4096

_TOOL_CHOICE_TO_ANTHROPIC = {"auto": "auto", "none": "none", "required": "any"}
_TOOL_CHOICE_TO_OPENAI = {"auto": "auto", "none": "none", "any": "required"}

Json = dict[str, Any]


# ---------------------------------------------------------------- OpenAI -> Anthropic


def openai_to_anthropic_request(payload: Json, upstream_model: str) -> Json:
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("`messages` must be a non-empty array.", param="messages")
    if payload.get("n") not in (None, 1):
        raise InvalidRequest("Anthropic models return one choice: `n` must be 1.", param="n")
    system, turns = _split_openai_messages(messages)
    instruction = _json_instruction(payload.get("response_format"))
    if instruction:
        system.append(instruction)
    out: Json = {"model": upstream_model, "max_tokens": _max_tokens(payload), "messages": turns}
    if system:
        out["system"] = "\n\n".join(system)
    _copy_sampling_to_anthropic(payload, out)
    _copy_tools_to_anthropic(payload, out)
    user = payload.get("user")
    if isinstance(user, str) and user:
        out["metadata"] = {"user_id": user}
    return out


def _max_tokens(payload: Json) -> int:
    for key in ("max_completion_tokens", "max_tokens"):
        value = payload.get(key)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidRequest(f"`{key}` must be a positive integer.", param=key)
            return value
    return DEFAULT_MAX_TOKENS


def _copy_sampling_to_anthropic(payload: Json, out: Json) -> None:
    temperature = payload.get("temperature")
    if isinstance(temperature, int | float):
        # OpenAI accepts 0..2, Anthropic 0..1: clamp rather than fail a request that works on OpenAI.
        out["temperature"] = min(float(temperature), 1.0)
    if isinstance(payload.get("top_p"), int | float):
        out["top_p"] = payload["top_p"]
    stop = payload.get("stop")
    if isinstance(stop, str):
        out["stop_sequences"] = [stop]
    elif isinstance(stop, list) and stop:
        out["stop_sequences"] = [s for s in stop if isinstance(s, str)]
    if payload.get("stream"):
        out["stream"] = True


def _copy_tools_to_anthropic(payload: Json, out: Json) -> None:
    tools = payload.get("tools")
    if isinstance(tools, list) and tools:
        out["tools"] = [_tool_to_anthropic(tool) for tool in tools]
    if web_search.wants_search(payload):  # Anthropic runs the search itself
        out.setdefault("tools", []).append(anthropic_search.search_tool(payload[web_search.OPTIONS]))
    choice = _tool_choice_to_anthropic(payload.get("tool_choice"))
    if payload.get("parallel_tool_calls") is False and "tools" in out:
        choice = choice or {"type": "auto"}
        # Anthropic rejects the flag on `none`: nothing is called there anyway.
        if choice["type"] != "none":
            choice["disable_parallel_tool_use"] = True
    if choice is not None:
        out["tool_choice"] = choice


def _tool_to_anthropic(tool: Any) -> Json:
    if (
        not isinstance(tool, dict)
        or tool.get("type") != "function"
        or not isinstance(tool.get("function"), dict)
    ):
        raise InvalidRequest("Only `function` tools can be sent to Anthropic models.", param="tools")
    fn = tool["function"]
    if not isinstance(fn.get("name"), str):
        raise InvalidRequest("Every tool needs a `function.name`.", param="tools")
    schema = fn.get("parameters")
    out: Json = {
        "name": fn["name"],
        # `input_schema` is required by Anthropic; OpenAI allows a tool without parameters.
        "input_schema": schema if isinstance(schema, dict) else {"type": "object", "properties": {}},
    }
    if isinstance(fn.get("description"), str):
        out["description"] = fn["description"]
    return out


def _tool_choice_to_anthropic(choice: Any) -> Json | None:
    if choice is None:
        return None
    if isinstance(choice, str) and choice in _TOOL_CHOICE_TO_ANTHROPIC:
        return {"type": _TOOL_CHOICE_TO_ANTHROPIC[choice]}
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = as_object(choice.get("function")).get("name")
        if isinstance(name, str):
            return {"type": "tool", "name": name}
    raise InvalidRequest("Unsupported `tool_choice` for Anthropic models.", param="tool_choice")


def _json_instruction(fmt: Any) -> str | None:
    """Anthropic has no native JSON mode, so `response_format` becomes a system instruction;
    the reply is not guaranteed to be valid JSON the way OpenAI's constrained decoding is."""
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return None
    if fmt["type"] == "json_object":
        return "Respond only with a single valid JSON object, with no text before or after it."
    if fmt["type"] == "json_schema":
        spec = as_object(fmt.get("json_schema"))
        schema = orjson.dumps(spec.get("schema") or {}).decode()
        return (
            "Respond only with a single valid JSON object, with no text before or after it, "
            f"that conforms to this JSON Schema:\n{schema}"
        )
    raise InvalidRequest("Unsupported `response_format` type.", param="response_format")


def _split_openai_messages(messages: list[Any]) -> tuple[list[str], list[Json]]:
    """System texts, and alternating user/assistant turns (consecutive same-role turns merged,
    since Anthropic rejects two turns of one role in a row)."""
    system: list[str] = []
    turns: list[Json] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise InvalidRequest("Each message must be an object.", param=f"messages[{i}]")
        role = msg.get("role")
        if role in ("system", "developer"):
            text = _plain_text(msg.get("content"), f"messages[{i}]")
            if text:
                system.append(text)
            continue
        if role == "user":
            blocks = _user_blocks(msg.get("content"), i)
        elif role == "assistant":
            blocks = _assistant_blocks(msg, i)
        elif role == "tool":
            role, blocks = "user", [_tool_result_block(msg, i)]
        else:
            raise InvalidRequest(f"Unsupported message role {role!r}.", param=f"messages[{i}].role")
        if not blocks:
            continue  # Anthropic rejects empty content; an empty turn carries nothing anyway.
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return system, [_simplify(turn) for turn in turns]


def _simplify(turn: Json) -> Json:
    """A turn that is one plain text block is sent as a string, the form most clients use."""
    blocks = turn["content"]
    if len(blocks) == 1 and blocks[0].keys() == {"type", "text"} and blocks[0]["type"] == "text":
        return {"role": turn["role"], "content": blocks[0]["text"]}
    return turn


def _plain_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise InvalidRequest("Only text parts are allowed here.", param=where)
            texts.append(str(part.get("text", "")))
        return "\n".join(texts)
    raise InvalidRequest("Message content must be a string or an array of parts.", param=where)


def _user_blocks(content: Any, i: int) -> list[Json]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        raise InvalidRequest("Message content must be a string or an array of parts.", param=f"messages[{i}]")
    blocks: list[Json] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            if part.get("text"):
                blocks.append({"type": "text", "text": str(part["text"])})
        elif kind == "image_url":
            blocks.append(_image_block(part.get("image_url"), f"messages[{i}].content[{j}]"))
        else:
            raise InvalidRequest(
                f"Content part type {kind!r} is not supported by Anthropic models.",
                param=f"messages[{i}].content[{j}]",
            )
    return blocks


def _image_block(image: Any, where: str) -> Json:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str):
        raise InvalidRequest("`image_url.url` must be a string.", param=where)
    if url.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    if url.startswith("data:"):
        header, sep, data = url[5:].partition(",")
        media_type, _, encoding = header.partition(";")
        if sep and encoding == "base64" and media_type.startswith("image/"):
            return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    raise InvalidRequest("Images must be http(s) URLs or base64 `data:image/...` URLs.", param=where)


def _assistant_blocks(msg: Json, i: int) -> list[Json]:
    text = _plain_text(msg.get("content"), f"messages[{i}].content")
    blocks: list[Json] = [{"type": "text", "text": text}] if text else []
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list):
        raise InvalidRequest("`tool_calls` must be an array.", param=f"messages[{i}].tool_calls")
    for j, call in enumerate(calls):
        where = f"messages[{i}].tool_calls[{j}]"
        fn = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(fn, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(fn.get("name"), str)
        ):
            raise InvalidRequest("Each tool call needs an `id` and a `function.name`.", param=where)
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": fn["name"],
                "input": _arguments(fn.get("arguments"), where),
            }
        )
    return blocks


def _arguments(raw: Any, where: str) -> Json:
    """OpenAI sends arguments as a JSON string; Anthropic wants the object itself."""
    if raw is None or raw == "":
        return {}
    try:
        parsed = orjson.loads(raw) if isinstance(raw, str) else raw
    except orjson.JSONDecodeError:
        raise InvalidRequest("Tool call `arguments` are not valid JSON.", param=where) from None
    if not isinstance(parsed, dict):
        raise InvalidRequest("Tool call `arguments` must encode a JSON object.", param=where)
    return parsed


def _tool_result_block(msg: Json, i: int) -> Json:
    call_id = msg.get("tool_call_id")
    if not isinstance(call_id, str):
        raise InvalidRequest("Tool messages need a `tool_call_id`.", param=f"messages[{i}].tool_call_id")
    content = msg.get("content")
    block: Json = {"type": "tool_result", "tool_use_id": call_id}
    if isinstance(content, list):
        block["content"] = _user_blocks(content, i)
    else:
        block["content"] = _plain_text(content, f"messages[{i}].content")
    return block


# ---------------------------------------------------------------- Anthropic -> OpenAI


def anthropic_to_openai_request(payload: Json, dropped: Dropped | None = None) -> Json:
    """The canonical request; server tools without an equivalent are left out and named in
    `dropped` (web search becomes `web_search_options`)."""
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("`messages` must be a non-empty array.", param="messages")
    out: Json = {"model": payload.get("model"), "messages": []}
    system = _system_text(payload.get("system"))
    if system:
        out["messages"].append({"role": "system", "content": system})
    for i, msg in enumerate(messages):
        out["messages"].extend(_anthropic_turn(msg, i))
    if isinstance(payload.get("max_tokens"), int):
        out["max_tokens"] = payload["max_tokens"]
    for key in ("temperature", "top_p"):
        if optional_number(payload.get(key), key) is not None:
            out[key] = payload[key]
    stop = string_list(payload.get("stop_sequences"), "stop_sequences")
    if stop:
        out["stop"] = stop
    if payload.get("stream"):
        # Anthropic streams always end with token counts, so the usage chunk is always needed.
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    _copy_tools_to_openai(payload, out, dropped)
    metadata = optional_object(payload.get("metadata"), "metadata")
    user = optional_string(metadata.get("user_id"), "metadata.user_id")
    if user:
        out["user"] = user
    return out


def _system_text(system: Any) -> str:
    if system is None or isinstance(system, str):
        return system or ""
    if isinstance(system, list):
        return "\n\n".join(_text_of(block, f"system[{j}]") for j, block in enumerate(system))
    raise InvalidRequest("`system` must be a string or an array of text blocks.", param="system")


def _text_of(block: Any, where: str) -> str:
    """The text of a `{"type": "text", "text": ...}` block; anything else is refused."""
    if not isinstance(block, dict) or block.get("type") != "text":
        raise InvalidRequest("Only text blocks are allowed here.", param=where)
    text = block.get("text")
    if not isinstance(text, str):
        raise wrong_type(f"{where}.text", "a string")
    return text


def _anthropic_turn(msg: Any, i: int) -> list[Json]:
    """One Anthropic turn as OpenAI messages: a user turn's `tool_result` blocks become `tool`
    messages (placed first, answering the previous assistant turn), the rest one user message."""
    if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
        raise InvalidRequest("Each message needs role `user` or `assistant`.", param=f"messages[{i}]")
    content = msg.get("content")
    if isinstance(content, str):
        return [{"role": msg["role"], "content": content}]
    if not isinstance(content, list):
        raise InvalidRequest(
            "Message content must be a string or an array of blocks.", param=f"messages[{i}]"
        )
    if msg["role"] == "assistant":
        return [_assistant_message(content, i)]
    out = [_tool_message(b, i) for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    rest = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
    if rest:
        out.append({"role": "user", "content": _user_parts(rest, f"messages[{i}]")})
    return out


def _user_parts(blocks: list[Any], where: str) -> str | list[Json]:
    parts: list[Json] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append({"type": "text", "text": _text_of(block, f"{where}.content[{j}]")})
        elif kind == "image":
            parts.append(
                {"type": "image_url", "image_url": {"url": _image_url(block, f"{where}.content[{j}]")}}
            )
        elif kind == "document":
            parts.append(_document_part(block, f"{where}.content[{j}]"))
        else:
            raise InvalidRequest(
                f"Content block type {kind!r} cannot be translated.", param=f"{where}.content[{j}]"
            )
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts


def _image_url(block: Json, where: str) -> str:
    source = block.get("source")
    if isinstance(source, dict):
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return str(source["url"])
        if source.get("type") == "base64":
            data = base64_text(source.get("data"), f"{where}.source.data")
            media_type = optional_string(source.get("media_type"), f"{where}.source.media_type")
            return f"data:{media_type or 'image/png'};base64,{data}"
    raise InvalidRequest("Unsupported image source.", param=where)


def _document_part(block: Json, where: str) -> Json:
    source = block.get("source")
    if (
        isinstance(source, dict)
        and source.get("type") == "base64"
        and source.get("media_type") == "application/pdf"
    ):
        try:
            base64.b64decode(str(source.get("data", "")), validate=True)
        except (binascii.Error, ValueError):  # ValueError: characters outside ASCII
            raise InvalidRequest("Document data is not valid base64.", param=where) from None
        filename = str(block.get("title") or "document.pdf")
        data_url = f"data:application/pdf;base64,{source['data']}"
        return {"type": "file", "file": {"file_data": data_url, "filename": filename}}
    raise InvalidRequest("Only base64 PDF documents can be translated.", param=where)


def _assistant_message(blocks: list[Any], i: int) -> Json:
    texts: list[str] = []
    calls: list[Json] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(_text_of(block, f"messages[{i}].content[{j}]"))
        elif kind == "tool_use":
            args = orjson.dumps(block.get("input") or {}).decode()
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {"name": block.get("name"), "arguments": args},
                }
            )
        elif kind in ("thinking", "redacted_thinking"):
            continue  # Signed reasoning only means something to Anthropic; OpenAI has no slot for it.
        elif kind in anthropic_search.SERVER_BLOCKS:
            continue  # A search already run: the text after it carries what it found.
        else:
            raise InvalidRequest(f"Content block type {kind!r} cannot be translated.", param=f"messages[{i}]")
    out: Json = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    return out


def _tool_message(block: Json, i: int) -> Json:
    content = block.get("content")
    if isinstance(content, list):
        # OpenAI tool messages carry text parts only.
        text = "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    else:
        text = str(content or "")
    if block.get("is_error"):
        # OpenAI has no error flag on tool results; say it in the text so the model still knows.
        text = f"Error: {text}"
    tool_use_id = block.get("tool_use_id")
    if not isinstance(tool_use_id, str):
        raise InvalidRequest("`tool_result` needs a `tool_use_id`.", param=f"messages[{i}]")
    return {"role": "tool", "tool_call_id": tool_use_id, "content": text}


def _copy_tools_to_openai(payload: Json, out: Json, dropped: Dropped | None) -> None:
    tools: list[Json] = []
    for j, tool in enumerate(optional_array(payload.get("tools"), "tools")):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or kind in (None, "custom"):
            tools.append(_tool_to_openai(tool))
        elif anthropic_search.is_search_tool(tool):
            out[web_search.OPTIONS] = anthropic_search.options_of(tool, f"tools[{j}]", dropped)
        elif not isinstance(kind, str):
            raise wrong_type(f"tools[{j}].type", "a string")
        elif dropped is not None:  # a server or Anthropic-defined tool: no equivalent elsewhere
            dropped.tool(kind, f"tools[{j}]")
    if tools:
        out["tools"] = tools
    choice = payload.get("tool_choice")
    if choice is None:
        return
    kind = optional_object(choice, "tool_choice").get("type")
    if isinstance(kind, str) and kind in _TOOL_CHOICE_TO_OPENAI:
        out["tool_choice"] = _TOOL_CHOICE_TO_OPENAI[kind]
    elif kind == "tool" and isinstance(choice.get("name"), str):
        out["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    else:
        raise InvalidRequest("Unsupported `tool_choice`.", param="tool_choice")
    if choice.get("disable_parallel_tool_use"):
        out["parallel_tool_calls"] = False


def _tool_to_openai(tool: Any) -> Json:
    # Server tools (web search, code execution, ...) carry a versioned `type`; only client
    # tools (no type, or `custom`) have an OpenAI function equivalent.
    if (
        not isinstance(tool, dict)
        or tool.get("type") not in (None, "custom")
        or not isinstance(tool.get("name"), str)
    ):
        raise InvalidRequest("Only client tools with a `name` can be translated.", param="tools")
    schema = optional_object(tool.get("input_schema"), "tools[].input_schema")
    fn: Json = {"name": tool["name"], "parameters": schema or {"type": "object", "properties": {}}}
    if isinstance(tool.get("description"), str):
        fn["description"] = tool["description"]
    return {"type": "function", "function": fn}
