"""Streaming translation: Gemini streamGenerateContent (`alt=sse`) ⇄ OpenAI chat completion chunks.

Each translator is fed raw upstream bytes in whatever pieces the network delivers and returns
complete client-side SSE events; `finish()` is called once the upstream body has ended.

Gemini has no terminator event: every event is a whole GenerateContentResponse fragment and the
last one carries `finishReason` and the final `usageMetadata`. A Gemini stream that ends without
any finishReason, or an OpenAI stream without finish_reason or `[DONE]`, was cut off: the client
then gets an in-band error instead of a clean ending, and `broken` is set, so the SDKs raise
rather than silently return a truncated answer.

Google Search grounding (`gemini_search`) arrives with the last event; its offsets count the
whole answer streamed so far, so each translator keeps a choice's text.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from unigate.translate import web_search
from unigate.translate.gemini_fields import Json, as_list, as_object, field
from unigate.translate.gemini_inbound import tool_call
from unigate.translate.gemini_response import (
    MALFORMED_CALL,
    call_id,
    call_id_prefix,
    finish_reason,
    function_call_part,
    gemini_finish_reason,
    grounding_fields,
    openai_id,
    openai_usage,
    token_counts,
    usage_metadata,
)
from unigate.translate.gemini_search import grounding_out
from unigate.translate.openai_chunks import CUT_OFF, OpenAIChunkReader, OpenAIChunkWriter, openai_error_chunk
from unigate.translate.pieces import Pieces
from unigate.translate.sse import SSEEvent, json_event, json_object

_OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}
# OpenAI error type -> (HTTP code, status) of the Gemini error object.
_GEMINI_ERRORS = {
    "invalid_request_error": (400, "INVALID_ARGUMENT"),
    "authentication_error": (401, "UNAUTHENTICATED"),
    "permission_error": (403, "PERMISSION_DENIED"),
    "not_found_error": (404, "NOT_FOUND"),
    "rate_limit_error": (429, "RESOURCE_EXHAUSTED"),
}


class GeminiToOpenAIStream(OpenAIChunkWriter):
    """Gemini SSE events in, OpenAI `chat.completion.chunk` events out.

    Gemini sends each functionCall whole, so every call becomes one tool call fragment carrying
    its id, name and complete arguments. Candidates (`candidateCount` > 1) map to choices."""

    def __init__(self, model: str, include_usage: bool, *, created: int | None = None) -> None:
        super().__init__(model, include_usage, created)
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0
        self._call_prefix = ""
        self._calls = 0  # calls so far across all candidates, for synthesized ids
        self._tool_count: dict[int, int] = {}  # choice index -> tool calls sent
        self._started: set[int] = set()  # choices whose first chunk (with the role) was sent
        self._finished: set[int] = set()
        self._usage_metadata: Json = {}
        self._said: defaultdict[int, Pieces] = defaultdict(Pieces)  # choice index -> its text so far

    def _completed(self) -> bool:
        return bool(self._finished)

    def _usage(self) -> Json:
        return openai_usage(self._usage_metadata)

    def _handle(self, events: list[SSEEvent]) -> bytes:
        out = b""
        for _name, data in events:
            if self._errored:
                break
            obj = json_object(data)
            if obj is None:
                continue
            out += self._on_error(obj["error"]) if "error" in obj else self._on_response(obj)
        return out

    def _on_response(self, response: Json) -> bytes:
        if self._id is None:
            response_id = field(response, "responseId")
            self._id, self._call_prefix = openai_id(response_id), call_id_prefix(response_id)
        meta = field(response, "usageMetadata")
        if isinstance(meta, dict):
            # Each event repeats the running totals; the last one is final.
            self._usage_metadata = meta
            self.prompt_tokens, self.completion_tokens, self.cached_tokens = token_counts(meta)
        out = b""
        candidates = as_list(response.get("candidates"))
        for position, candidate in enumerate(map(as_object, candidates)):
            out += self._on_candidate(candidate, position)
        blocked = field(as_object(field(response, "promptFeedback")), "blockReason")
        if not candidates and blocked and 0 not in self._finished:
            # A blocked prompt gets one event with promptFeedback and no candidates.
            self._finished.add(0)
            out += self._chunk(0, {"content": ""}, "content_filter")
        return out

    def _on_candidate(self, candidate: Json, position: int) -> bytes:
        index = candidate.get("index")
        index = index if isinstance(index, int) else position
        parts = [as_object(part) for part in as_list(as_object(candidate.get("content")).get("parts"))]
        delta: Json = {}
        # Thought summaries are not part of the answer an OpenAI client expects.
        text = "".join(str(part["text"]) for part in parts if "text" in part and not part.get("thought"))
        if text:
            delta["content"] = text
            self._said[index].add(text)
        grounding = field(candidate, "groundingMetadata")
        if grounding is not None:  # its spans index the whole answer so far
            delta.update(grounding_fields(grounding, self._said[index].joined()))
        calls = [
            self._tool_call(index, as_object(field(p, "functionCall")))
            for p in parts
            if field(p, "functionCall")
        ]
        if calls:
            delta["tool_calls"] = calls
        out = self._chunk(index, delta, None) if delta else b""
        reason = field(candidate, "finishReason")
        if reason and index not in self._finished:
            self._finished.add(index)
            out += self._chunk(index, {}, finish_reason(reason, self._tool_count.get(index, 0) > 0))
        return out

    def _tool_call(self, index: int, call: Json) -> Json:
        position = self._tool_count.get(index, 0)
        self._tool_count[index] = position + 1
        fragment = {"index": position, **tool_call(call, call_id(call, self._call_prefix, self._calls))}
        self._calls += 1
        return fragment

    def _on_error(self, error: Any) -> bytes:
        self._errored = self.broken = True
        error = as_object(error)
        code = error.get("code")
        kind = _OPENAI_ERROR_TYPES.get(code if isinstance(code, int) else 0, "upstream_error")
        status = error.get("status")
        message = str(error.get("message") or "The upstream reported an error.")
        return openai_error_chunk(message, kind, str(status) if status else None)

    def _chunk(self, index: int, delta: Json, finish: str | None) -> bytes:
        if index not in self._started:
            self._started.add(index)
            delta = {"role": "assistant", **delta}
        return self._event({"choices": [{"index": index, "delta": delta, "finish_reason": finish}]})


class OpenAIToGeminiStream(OpenAIChunkReader):
    """OpenAI `chat.completion.chunk` events in, Gemini SSE events out.

    Text deltas pass through as they come. Tool call fragments are accumulated per index and
    sent whole, as Gemini does, in the last event along with finishReason and usageMetadata;
    that event goes out at `[DONE]` (OpenAI's usage chunk comes after the finish chunk)."""

    def __init__(self, model: str) -> None:
        super().__init__()
        self.model = model
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0
        self.broken = False
        self._response_id: str | None = None
        self._calls: dict[int, dict[int, Json]] = {}  # choice index -> tool call index -> {name, arguments}
        self._finish: dict[int, str] = {}  # choice index -> OpenAI finish_reason
        self._usage: Json | None = None
        self._said: defaultdict[int, Pieces] = defaultdict(Pieces)  # choice index -> its text so far
        self._cited: dict[int, list[web_search.Citation]] = {}
        self._searches: dict[int, list[web_search.Search]] = {}

    def finish(self) -> bytes:
        out = self._rest()
        if self._done or self._errored:
            return out
        if self._finish:  # Complete, only the `[DONE]` line was missing.
            return out + self._final()
        self.broken = True
        return out + _gemini_error(502, CUT_OFF, "UNAVAILABLE")

    def _on_chunk(self, chunk: Json) -> bytes:
        if self._response_id is None and isinstance(chunk.get("id"), str):
            self._response_id = chunk["id"].removeprefix("chatcmpl-")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
            self.prompt_tokens, self.completion_tokens, self.cached_tokens = token_counts(
                usage_metadata(usage)
            )
        out = b""
        for position, choice in enumerate(map(as_object, as_list(chunk.get("choices")))):
            index = choice.get("index")
            out += self._on_choice(choice, index if isinstance(index, int) else position)
        return out

    def _on_choice(self, choice: Json, index: int) -> bytes:
        delta = as_object(choice.get("delta"))
        for position, call in enumerate(map(as_object, as_list(delta.get("tool_calls")))):
            slot_index = call.get("index")
            slots = self._calls.setdefault(index, {})
            slot = slots.setdefault(
                slot_index if isinstance(slot_index, int) else position, {"arguments": Pieces()}
            )
            fn = as_object(call.get("function"))
            if isinstance(fn.get("name"), str) and fn["name"]:
                slot["name"] = fn["name"]  # only on the first fragment of a call
            if isinstance(fn.get("arguments"), str):
                slot["arguments"].add(fn["arguments"])
        if choice.get("finish_reason"):
            self._finish[index] = str(choice["finish_reason"])
        # Searches and citations are rare: most chunks carry neither key (a test, not a call).
        if web_search.SEARCHES in delta:
            self._searches.setdefault(index, []).extend(web_search.searches(delta[web_search.SEARCHES]))
        if web_search.ANNOTATIONS in delta:
            self._cited.setdefault(index, []).extend(web_search.citations(delta[web_search.ANNOTATIONS]))
        text = delta.get("content") or delta.get("refusal")
        if not isinstance(text, str) or not text:
            return b""
        self._said[index].add(text)
        return self._event(
            {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": index}]}
        )

    def _on_done(self) -> bytes:
        return self._final()

    def _final(self) -> bytes:
        self._done = True
        candidates = [
            self._last_candidate(index) for index in sorted(set(self._finish) | set(self._calls)) or [0]
        ]
        fields: Json = {"candidates": candidates}
        if self._usage is not None:
            fields["usageMetadata"] = usage_metadata(self._usage)
        return self._event(fields)

    def _last_candidate(self, index: int) -> Json:
        reason = gemini_finish_reason(self._finish.get(index, "stop"))
        parts: list[Json] = []
        for _position, slot in sorted(self._calls.get(index, {}).items()):
            part = function_call_part({"name": slot.get("name"), "arguments": slot["arguments"].joined()})
            if part is None:
                reason = MALFORMED_CALL
            else:
                parts.append(part)
        # Google's own last event carries an empty text part when there is nothing left to say.
        content = {"role": "model", "parts": parts or [{"text": ""}]}
        out: Json = {"content": content, "finishReason": reason, "index": index}
        cited = self._cited.get(index, [])
        searches = self._searches.get(index) or ([web_search.implied_search(cited)] if cited else [])
        if searches:
            out["groundingMetadata"] = grounding_out(self._said[index].joined(), cited, searches)
        return out

    def _on_error(self, error: Any) -> bytes:
        self._errored = self.broken = True
        error = error if isinstance(error, dict) else {"message": str(error)}
        code, status = _GEMINI_ERRORS.get(str(error.get("type")), (500, "INTERNAL"))
        return _gemini_error(code, str(error.get("message") or "The upstream reported an error."), status)

    def _event(self, fields: Json) -> bytes:
        tail: Json = {"modelVersion": self.model}
        if self._response_id is not None:
            tail["responseId"] = self._response_id
        return json_event({**fields, **tail})


def _gemini_error(code: int, message: str, status: str) -> bytes:
    """google-genai raises on an event whose JSON starts with `{"error":`, so `error` is the only key."""
    return json_event({"error": {"code": code, "message": message, "status": status}})
