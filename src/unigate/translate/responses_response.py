"""Response objects of the Responses API, built from a chat completion.

A `ResponseFrame` holds what every Response object of one call shares and is known before
the upstream answers (id, model, creation time, and the request fields a Response echoes);
the body translation here and the stream translation (`responses_stream`) both build their
objects from it, so a streamed call's events and its stored object agree. It also holds what
turns the upstream's function calls back into the client's tools (`ToolNames`).

A web search the upstream ran (`translate/web_search`) becomes a `web_search_call` item
before the message, and its citations `url_citation` annotations on the message's text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from unigate.translate import web_search
from unigate.translate.anthropic_response import as_object
from unigate.translate.responses_items import item_id
from unigate.translate.responses_request import ResponsesRequest
from unigate.translate.responses_tools import ToolNames, call_item

Json = dict[str, Any]

# Chat finish reasons that end a response early, with the reason Responses reports.
INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


@dataclass(slots=True)
class ResponseFrame:
    id: str
    model: str
    created_at: int
    echo: Json  # request fields every Response object repeats
    names: ToolNames = field(default_factory=ToolNames)
    sources: bool = False  # a web search call lists its sources (`include`)

    @classmethod
    def for_request(cls, request: ResponsesRequest, response_id: str | None = None) -> ResponseFrame:
        created = int(time.time())
        rid = response_id or item_id("resp_")
        return cls(rid, request.model, created, _echo(request), request.names, request.sources)

    def call(self, fc_id: str, call_id: str, upstream: str, arguments: str, status: str) -> Json:
        """The output item of an upstream function call, as the client's tool."""
        return call_item(self.names, fc_id, call_id, upstream, arguments, status)

    def search_call(self, ws_id: str, search: web_search.Search, status: str) -> Json:
        action: Json = {"type": "search", "query": search.query}
        if search.queries:
            action["queries"] = list(search.queries)
        if self.sources:
            action["sources"] = [{"type": "url", "url": s.url} for s in search.sources]
        return {"id": ws_id, "type": "web_search_call", "status": status, "action": action}

    def response(
        self,
        status: str,
        output: list[Json],
        usage: Json | None = None,
        *,
        error: Json | None = None,
        incomplete: str | None = None,
    ) -> Json:
        """The Response object in `status` (queued, in_progress, completed, incomplete, failed,
        cancelled)."""
        echo = self.echo
        out: Json = {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": echo["background"],
            "error": error,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "instructions": echo["instructions"],
            "max_output_tokens": echo["max_output_tokens"],
            "max_tool_calls": echo["max_tool_calls"],
            "model": self.model,
            "output": output,
            "parallel_tool_calls": echo["parallel_tool_calls"],
            "previous_response_id": echo["previous_response_id"],
            "reasoning": echo["reasoning"],
            "service_tier": echo["service_tier"],
            "store": echo["store"],
            "temperature": echo["temperature"],
            "text": echo["text"],
            "tool_choice": echo["tool_choice"],
            "tools": echo["tools"],
            "top_p": echo["top_p"],
            "truncation": echo["truncation"],
            "usage": usage,
            "user": echo["user"],
            "metadata": echo["metadata"],
        }
        if status == "completed":
            out["completed_at"] = int(time.time())
        return out


def _echo(request: ResponsesRequest) -> Json:
    p = request.payload
    reasoning = as_object(p.get("reasoning"))
    text = as_object(p.get("text"))
    return {
        "background": request.background,
        "instructions": request.instructions,
        "max_output_tokens": p.get("max_output_tokens"),
        "max_tool_calls": p.get("max_tool_calls"),
        "parallel_tool_calls": p.get("parallel_tool_calls") is not False,
        "previous_response_id": request.previous_response_id,
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "service_tier": p.get("service_tier") or "default",
        "store": request.store,
        "temperature": _number(p.get("temperature"), 1.0),
        "text": {
            "format": text.get("format") or {"type": "text"},
            "verbosity": text.get("verbosity") or "medium",
        },
        "tool_choice": p.get("tool_choice") or "auto",
        "tools": [_echoed_tool(tool) for tool in p.get("tools") or []],
        "top_p": _number(p.get("top_p"), 1.0),
        "truncation": p.get("truncation") or "disabled",
        "user": p.get("user"),
        "metadata": request.metadata,
    }


def _echoed_tool(tool: Any) -> Any:
    """A tool as a Response repeats it: a function tool with its defaults filled in (`strict`
    is true unless the request said otherwise; `parameters` may be null), as OpenAI echoes it."""
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return tool
    return {**tool, "parameters": tool.get("parameters"), "strict": tool.get("strict", True)}


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def response_usage(usage: Any) -> Json:
    """Chat completion usage in the Responses shape."""
    usage = usage if isinstance(usage, dict) else {}
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    details_in = usage.get("prompt_tokens_details")
    details_out = usage.get("completion_tokens_details")
    details_in = details_in if isinstance(details_in, dict) else {}
    cached, written = _count(details_in.get("cached_tokens")), _count(details_in.get("cache_write_tokens"))
    reasoning = _count(details_out.get("reasoning_tokens")) if isinstance(details_out, dict) else 0
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": prompt + completion,
    }


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def text_part(text: str, annotations: list[Json] | None = None) -> Json:
    return {"type": "output_text", "text": text, "annotations": annotations or [], "logprobs": []}


def url_annotation(cite: web_search.Citation, offset: int = 0) -> Json:
    """A citation as a Responses annotation on a text part that starts `offset` characters into
    the chat answer."""
    return {
        "type": "url_citation",
        "url": cite.url,
        "title": cite.title,
        "start_index": cite.start - offset,
        "end_index": cite.end - offset,
    }


def message_item(msg_id: str, parts: list[Json], status: str) -> Json:
    return {"id": msg_id, "type": "message", "status": status, "role": "assistant", "content": parts}


def chat_to_response(body: Any, frame: ResponseFrame) -> Json:
    """A chat completion (the first choice) as a finished Response object."""
    body = as_object(body)
    choices = body.get("choices")
    choice = as_object(choices[0]) if isinstance(choices, list) and choices else {}
    message = as_object(choice.get("message"))
    incomplete = INCOMPLETE.get(str(choice.get("finish_reason")))
    status = "incomplete" if incomplete else "completed"
    searches = web_search.answer_searches(message)
    output = [frame.search_call(item_id("ws_"), found, "completed") for found in searches]
    parts: list[Json] = []
    if isinstance(message.get("content"), str) and message["content"]:
        cited = web_search.citations(message.get(web_search.ANNOTATIONS))
        parts.append(text_part(message["content"], [url_annotation(c) for c in cited]))
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        parts.append({"type": "refusal", "refusal": message["refusal"]})
    if parts:
        output.append(message_item(item_id("msg_"), parts, status))
    for call in message.get("tool_calls") or []:
        fn = as_object(as_object(call).get("function"))
        if not fn:
            continue
        call_id = _text(call.get("id")) or item_id("call_")
        arguments = _text(fn.get("arguments")) or "{}"
        output.append(frame.call(item_id("fc_"), call_id, _text(fn.get("name")), arguments, "completed"))
    usage = response_usage(body.get("usage"))
    return frame.response(status, output, usage, incomplete=incomplete)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
