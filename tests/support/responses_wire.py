"""OpenAI's Responses API wire objects, built the way the real service sends them: response
objects, input and output items, and the typed stream events with their `sequence_number`s.
Used by the fake upstream that serves `/v1/responses` (fake_openai_responses.py)."""

from __future__ import annotations

import secrets
import time
from typing import Any

Item = dict[str, Any]


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


def input_items(value: Any) -> list[Item]:
    """The request's `input` as stored input items, each with an id (a string is one user
    message; message content given as a string becomes typed parts)."""
    if isinstance(value, str):
        value = [{"role": "user", "content": value}]
    items: list[Item] = []
    for raw in value if isinstance(value, list) else []:
        item = dict(raw)
        kind = item.get("type") or "message"
        if kind == "message":
            role = item.get("role", "user")
            content = item.get("content")
            if isinstance(content, str):
                part = "output_text" if role == "assistant" else "input_text"
                content = [{"type": part, "text": content}]
            item = {"type": "message", "role": role, "content": content or [], "status": "completed"}
            item["id"] = raw.get("id") or new_id("msg")
        elif kind == "function_call_output":
            item = {
                "type": "function_call_output",
                "call_id": raw.get("call_id"),
                "output": raw.get("output"),
                "status": "completed",
                "id": raw.get("id") or new_id("fco"),
            }
        else:  # function_call and other items, as the client echoed them
            item.setdefault("id", new_id(kind[:3]))
        items.append(item)
    return items


def text_of(item: Item) -> str:
    """The text an item carries (message parts, a tool's output)."""
    if item.get("type") == "function_call_output":
        return str(item.get("output") or "")
    if item.get("type") == "function_call":
        return str(item.get("arguments") or "")
    parts = item.get("content") or []
    return " ".join(str(p.get("text") or "") for p in parts if isinstance(p, dict))


def words(text: str) -> int:
    return len(text.split())


def message_item(text: str, status: str = "completed") -> Item:
    return {
        "id": new_id("msg"),
        "type": "message",
        "status": status,
        "content": [output_text(text)],
        "role": "assistant",
    }


def output_text(text: str) -> Item:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def function_call_item(name: str, arguments: str) -> Item:
    return {
        "id": new_id("fc"),
        "type": "function_call",
        "status": "completed",
        "arguments": arguments,
        "call_id": new_id("call"),
        "name": name,
    }


def usage(input_tokens: int, output_tokens: int) -> Item:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def response_object(body: dict[str, Any], response_id: str, status: str) -> Item:
    """A response object echoing the request's settings, with no output yet."""
    text = body.get("text") if isinstance(body.get("text"), dict) else {}
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": bool(body.get("background")),
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": body.get("model"),
        "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium", **text},
        "tool_choice": body.get("tool_choice", "auto"),
        # Function tools come back with their defaults filled in, as OpenAI echoes them.
        "tools": [
            {**t, "parameters": t.get("parameters"), "strict": t.get("strict", True)}
            if t.get("type") == "function"
            else t
            for t in body.get("tools") or []
        ],
        "top_logprobs": 0,
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": body.get("metadata") or {},
    }


def stream_events(final: Item) -> list[Item]:
    """Every event of a streamed response whose end state is `final`, numbered from 0."""
    start = {**final, "status": "in_progress", "output": [], "usage": None, "completed_at": None}
    events: list[Item] = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
    ]
    for index, item in enumerate(final["output"]):
        events += _item_events(index, item)
    events.append({"type": f"response.{final['status']}", "response": final})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def _item_events(index: int, item: Item) -> list[Item]:
    added = {**item, "status": "in_progress"}
    item_id = item["id"]
    if item["type"] == "function_call":
        args = item["arguments"]
        half = len(args) // 2
        return [
            {"type": "response.output_item.added", "output_index": index, "item": {**added, "arguments": ""}},
            *[
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item_id,
                    "output_index": index,
                    "delta": piece,
                }
                for piece in (args[:half], args[half:])
            ],
            {
                "type": "response.function_call_arguments.done",
                "item_id": item_id,
                "output_index": index,
                "name": item["name"],
                "arguments": args,
            },
            {"type": "response.output_item.done", "output_index": index, "item": item},
        ]
    text = item["content"][0]["text"]
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    pieces = [w + " " for w in text.split(" ")]
    pieces[-1] = pieces[-1][:-1]
    return [
        {"type": "response.output_item.added", "output_index": index, "item": {**added, "content": []}},
        {"type": "response.content_part.added", **where, "part": output_text("")},
        *[
            {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
            for piece in pieces
        ],
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": output_text(text)},
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> Item:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
