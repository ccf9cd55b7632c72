"""Request bodies, OpenAI -> Anthropic: the canonical chat request as a Messages request for an
`anthropic` upstream (the other direction is `anthropic_inbound`).

The function takes an already-parsed JSON object and returns a new one; input is never mutated.
Anything with no faithful equivalent on the other side raises `InvalidRequest` rather than being
silently dropped, except sampling knobs that only tune quality (`seed`, penalties).
"""

from __future__ import annotations

from typing import Any

import orjson

from unigate.errors import InvalidRequest
from unigate.translate import anthropic_search, web_search
from unigate.translate.anthropic_response import as_object

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
