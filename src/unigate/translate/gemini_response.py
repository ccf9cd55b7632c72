"""Non-streaming response bodies: Gemini GenerateContentResponse ⇄ OpenAI ChatCompletion, and
the pieces (finish reasons, usage, call ids) the stream translators share.

Both directions report the model name the caller passes in: the client sees the name it asked
for, not the upstream's version string.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson

from unigate.translate import web_search
from unigate.translate.gemini_fields import Json, as_list, as_object, field
from unigate.translate.gemini_inbound import tool_call
from unigate.translate.gemini_search import grounding_in, grounding_out

_FINISH_FROM_GEMINI = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
}
_FINISH_TO_GEMINI = {
    "stop": "STOP",
    "length": "MAX_TOKENS",
    "tool_calls": "STOP",
    "function_call": "STOP",
    "content_filter": "SAFETY",
}
# What Gemini reports for a call whose arguments are not valid JSON; the call itself is dropped.
MALFORMED_CALL = "MALFORMED_FUNCTION_CALL"
_OPENAI_ID_PREFIX = "chatcmpl-"


def finish_reason(reason: Any, has_calls: bool) -> str | None:
    """OpenAI `finish_reason` for a Gemini `finishReason` (None while still running). Gemini
    ends a function-calling turn with plain STOP; OpenAI clients look for `tool_calls`."""
    if not reason:
        return None
    mapped = _FINISH_FROM_GEMINI.get(str(reason), "stop")
    return "tool_calls" if mapped == "stop" and has_calls else mapped


def gemini_finish_reason(reason: Any) -> str:
    return _FINISH_TO_GEMINI.get(str(reason), "STOP")


def openai_id(response_id: Any) -> str:
    if not isinstance(response_id, str) or not response_id:
        return _OPENAI_ID_PREFIX + uuid.uuid4().hex
    return _OPENAI_ID_PREFIX + response_id


def call_id_prefix(response_id: Any) -> str:
    """Synthesized call ids are `call_<responseId>_<n>`: stable within a response and, since
    Google's response ids are unique, distinct across the turns of a conversation (UIs key tool
    invocations by id)."""
    if isinstance(response_id, str) and response_id:
        return f"call_{response_id}_"
    return f"call_{uuid.uuid4().hex[:16]}_"


def call_id(call: Json, prefix: str, n: int) -> str:
    """Newer Gemini models give their calls ids; those are kept."""
    given = call.get("id")
    return given if isinstance(given, str) and given else f"{prefix}{n}"


def token_counts(meta: Json) -> tuple[int, int, int]:
    """(prompt, completion, cached) tokens; Gemini counts thinking apart from the answer, OpenAI
    bills it as completion."""
    completion = _int(field(meta, "candidatesTokenCount")) + _int(field(meta, "thoughtsTokenCount"))
    return _int(field(meta, "promptTokenCount")), completion, _int(field(meta, "cachedContentTokenCount"))


def openai_usage(meta: Json) -> Json:
    prompt, completion, cached = token_counts(meta)
    total = _int(field(meta, "totalTokenCount")) or prompt + completion
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": _int(field(meta, "thoughtsTokenCount"))},
    }


def usage_metadata(usage: Json) -> Json:
    prompt, completion = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
    thoughts = _int(as_object(usage.get("completion_tokens_details")).get("reasoning_tokens"))
    cached = _int(as_object(usage.get("prompt_tokens_details")).get("cached_tokens"))
    meta: Json = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion - thoughts,
        "totalTokenCount": _int(usage.get("total_tokens")) or prompt + completion,
    }
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    if cached:
        meta["cachedContentTokenCount"] = cached
    return meta


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


# --- Gemini -> OpenAI -------------------------------------------------------------------------


def gemini_to_openai_response(body: Json, model: str, *, created: int | None = None) -> Json:
    response_id = field(body, "responseId")
    prefix = call_id_prefix(response_id)
    calls = 0
    choices = []
    for position, candidate in enumerate(map(as_object, as_list(body.get("candidates")))):
        choice = _choice(candidate, position, prefix, calls)
        calls += len(choice["message"].get("tool_calls", ()))
        choices.append(choice)
    if not choices and field(as_object(field(body, "promptFeedback")), "blockReason"):
        # A blocked prompt comes back as 200 with no candidates at all.
        message = {"role": "assistant", "content": "", "refusal": None}
        choices = [{"index": 0, "message": message, "finish_reason": "content_filter", "logprobs": None}]
    out: Json = {
        "id": openai_id(response_id),
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": choices,
    }
    meta = field(body, "usageMetadata")
    if isinstance(meta, dict):
        out["usage"] = openai_usage(meta)
    return out


def _choice(candidate: Json, position: int, prefix: str, first_call: int) -> Json:
    parts = [as_object(part) for part in as_list(as_object(candidate.get("content")).get("parts"))]
    # Thought summaries are not part of the answer an OpenAI client expects.
    text = "".join(str(part["text"]) for part in parts if "text" in part and not part.get("thought"))
    calls = [as_object(field(part, "functionCall")) for part in parts if field(part, "functionCall")]
    tool_calls = [tool_call(call, call_id(call, prefix, first_call + n)) for n, call in enumerate(calls)]
    message: Json = {"role": "assistant", "content": text or (None if tool_calls else ""), "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    message.update(grounding_fields(field(candidate, "groundingMetadata"), text, parts))
    index = candidate.get("index")
    return {
        "index": index if isinstance(index, int) else position,
        "message": message,
        # A complete response always has a reason; an absent one means the model simply ended.
        "finish_reason": finish_reason(field(candidate, "finishReason") or "STOP", bool(tool_calls)),
        "logprobs": None,
    }


def grounding_fields(meta: Any, text: str, parts: list[Json] | None = None) -> Json:
    """A candidate's Google Search grounding as the canonical message (or delta) fields."""
    if not isinstance(meta, dict):
        return {}
    cited, search = grounding_in(meta, text, parts)
    if search is None and not cited:
        return {}
    return {
        web_search.ANNOTATIONS: web_search.annotations_json(cited),
        web_search.SEARCHES: web_search.searches_json([search] if search else []),
    }


# --- OpenAI -> Gemini -------------------------------------------------------------------------


def openai_to_gemini_response(body: Json, model: str) -> Json:
    candidates = [
        _candidate(choice, position)
        for position, choice in enumerate(map(as_object, as_list(body.get("choices"))))
    ]
    out: Json = {"candidates": candidates}
    usage = body.get("usage")
    if isinstance(usage, dict):
        out["usageMetadata"] = usage_metadata(usage)
    out["modelVersion"] = model
    if isinstance(body.get("id"), str):
        out["responseId"] = body["id"].removeprefix(_OPENAI_ID_PREFIX)
    return out


def _candidate(choice: Json, position: int) -> Json:
    message = as_object(choice.get("message"))
    parts: list[Json] = [{"text": text} for text in _message_texts(message) if text]
    reason = gemini_finish_reason(choice.get("finish_reason"))
    for call in map(as_object, as_list(message.get("tool_calls"))):
        part = function_call_part(as_object(call.get("function")))
        if part is None:
            reason = MALFORMED_CALL
        else:
            parts.append(part)
    index = choice.get("index")
    out: Json = {
        "content": {"role": "model", "parts": parts},
        "finishReason": reason,
        "index": index if isinstance(index, int) else position,
    }
    searches = web_search.answer_searches(message)
    if searches:
        text = "".join(p["text"] for p in parts if "text" in p)
        cited = web_search.citations(message.get(web_search.ANNOTATIONS))
        out["groundingMetadata"] = grounding_out(text, cited, searches)
    return out


def _message_texts(message: Json) -> list[str]:
    content = message.get("content")
    texts = [content] if isinstance(content, str) else []
    for part in map(as_object, as_list(content)):
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
    if isinstance(message.get("refusal"), str):
        texts.append(message["refusal"])
    return texts


def function_call_part(fn: Json) -> Json | None:
    """A Gemini `functionCall` part for an OpenAI function, or None when its arguments are not a
    JSON object (Gemini's own answer to that is finishReason MALFORMED_FUNCTION_CALL)."""
    raw = fn.get("arguments")
    try:
        args = orjson.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except orjson.JSONDecodeError:
        return None
    if not isinstance(args, dict):
        return None
    return {"functionCall": {"name": fn.get("name"), "args": args}}
