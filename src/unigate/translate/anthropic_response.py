"""Non-streaming response bodies: Anthropic Message ⇄ OpenAI ChatCompletion, and the pieces
(ids, stop reasons, usage) the stream translators share."""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson

from unigate.errors import UpstreamFailed
from unigate.translate import anthropic_search, web_search
from unigate.translate.anthropic_search import SearchReader
from unigate.translate.web_search import Citation, Search

Json = dict[str, Any]

_FINISH_FROM_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
# `stop` cannot tell a natural end from a stop sequence; `end_turn` is the common case.
_STOP_FROM_FINISH = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}

_OPENAI_ID_PREFIX = "chatcmpl-"
_ANTHROPIC_ID_PREFIX = "msg_"


def finish_reason(stop_reason: Any) -> str | None:
    """OpenAI `finish_reason` for an Anthropic `stop_reason` (None while still running)."""
    if stop_reason is None:
        return None
    return _FINISH_FROM_STOP.get(str(stop_reason), "stop")


def stop_reason(finish: Any) -> str | None:
    """Anthropic `stop_reason` for an OpenAI `finish_reason`."""
    if finish is None:
        return None
    return _STOP_FROM_FINISH.get(str(finish), "end_turn")


def openai_id(anthropic_id: Any) -> str:
    """`msg_abc` -> `chatcmpl-abc`: the suffix is kept so logs can be matched across formats."""
    if not isinstance(anthropic_id, str) or not anthropic_id:
        return _OPENAI_ID_PREFIX + uuid.uuid4().hex
    return _OPENAI_ID_PREFIX + anthropic_id.removeprefix(_ANTHROPIC_ID_PREFIX)


def anthropic_id(openai_chat_id: Any) -> str:
    """`chatcmpl-abc` -> `msg_abc`."""
    if not isinstance(openai_chat_id, str) or not openai_chat_id:
        return _ANTHROPIC_ID_PREFIX + uuid.uuid4().hex
    return _ANTHROPIC_ID_PREFIX + openai_chat_id.removeprefix(_OPENAI_ID_PREFIX)


def prompt_tokens_of(usage: Json) -> tuple[int, int]:
    """(prompt tokens, cached tokens) from Anthropic usage. Anthropic's `input_tokens` excludes
    cache reads and writes; OpenAI's `prompt_tokens` counts every input token."""
    cached = _int(usage.get("cache_read_input_tokens"))
    total = _int(usage.get("input_tokens")) + cached + _int(usage.get("cache_creation_input_tokens"))
    return total, cached


def openai_usage(prompt: int, completion: int, cached: int) -> Json:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def anthropic_usage(usage: Any) -> Json:
    """Anthropic usage from OpenAI usage: cached tokens move out of `input_tokens`."""
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return {
        "input_tokens": max(_int(usage.get("prompt_tokens")) - cached, 0),
        "output_tokens": _int(usage.get("completion_tokens")),
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    }


def as_object(value: Any) -> Json:
    """`value` if it is a JSON object, else an empty one: upstream fields are untrusted."""
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# ---------------------------------------------------------------- Anthropic -> OpenAI


def anthropic_to_openai_response(body: Json, model: str) -> Json:
    texts: list[str] = []
    calls: list[Json] = []
    reader = SearchReader()
    found: list[Search] = []
    cited: list[Citation] = []
    for block in body.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            start = reader.chars
            texts.append(str(block.get("text", "")))
            reader.chars += len(texts[-1])
            cited.extend(reader.cited(start, block.get("citations")))
        elif kind == "server_tool_use":
            reader.use(block)
        elif kind == "web_search_tool_result":
            found.append(reader.result(block))
        elif kind == "tool_use":
            # `toolu_...` ids are valid OpenAI tool call ids as they are.
            args = orjson.dumps(block.get("input") or {}).decode()
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {"name": block.get("name"), "arguments": args},
                }
            )
        # Thinking and other server-tool blocks have no OpenAI chat equivalent and are left out.
    message: Json = {"role": "assistant", "content": "".join(texts) if texts else None, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    if found or cited:
        message[web_search.ANNOTATIONS] = web_search.annotations_json(cited)
        message[web_search.SEARCHES] = web_search.searches_json(found)
    usage = as_object(body.get("usage"))
    prompt, cached = prompt_tokens_of(usage)
    return {
        "id": openai_id(body.get("id")),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason(body.get("stop_reason")) or "stop",
                "logprobs": None,
            }
        ],
        "usage": openai_usage(prompt, _int(usage.get("output_tokens")), cached),
    }


# ---------------------------------------------------------------- OpenAI -> Anthropic


def openai_to_anthropic_response(body: Json, model: str) -> Json:
    choices = body.get("choices")
    choice = as_object(choices[0]) if isinstance(choices, list) and choices else {}
    message = as_object(choice.get("message"))
    content: list[Json] = []
    searches = web_search.answer_searches(message)
    for found in searches:
        content.extend(anthropic_search.search_blocks(found, anthropic_search.tool_use_id()))
    text = _message_text(message.get("content")) or message.get("refusal")
    if isinstance(text, str) and text:
        cited = web_search.citations(message.get(web_search.ANNOTATIONS))
        content.extend(anthropic_search.text_blocks(text, cited))
    for call in message.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            content.append(
                {
                    "type": "tool_use",
                    "id": call.get("id"),
                    "name": fn.get("name"),
                    "input": _arguments(fn.get("arguments")),
                }
            )
    finish = choice.get("finish_reason")
    if finish is None and message.get("refusal"):
        finish = "content_filter"
    usage = anthropic_usage(body.get("usage"))
    if searches:
        usage["server_tool_use"] = {"web_search_requests": len(searches)}
    return {
        "id": anthropic_id(body.get("id")),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(finish) or "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _arguments(raw: Any) -> Json:
    """The upstream model produced these; if they are not a JSON object the reply cannot be
    expressed as a `tool_use` block, which is an upstream failure, not the client's."""
    if raw is None or raw == "":
        return {}
    try:
        parsed = orjson.loads(raw) if isinstance(raw, str) else raw
    except orjson.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        raise UpstreamFailed("The upstream returned tool call arguments that are not a JSON object.")
    return parsed
