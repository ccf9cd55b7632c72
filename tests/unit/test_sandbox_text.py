"""The sandbox text provider: chat, completions and embeddings, called directly."""

from __future__ import annotations

import asyncio
import base64
import math
import re
import sys
from array import array
from pathlib import Path
from typing import Any

import orjson
import pytest

from unigate.config import ProviderConfig
from unigate.errors import InvalidRequest
from unigate.providers.base import ProviderContext, Reply, Target, TextCall, Timeouts
from unigate_sandbox.provider import SandboxProvider
from unigate_sandbox.schema_values import example_value

# --- helpers ---------------------------------------------------------------------------


def run(
    tmp_path: Path, op: str, payload: dict[str, Any], stream: bool = False, include_usage: bool = False
) -> tuple[Reply, bytes]:
    provider = SandboxProvider(
        ProviderConfig(name="sandbox", protocol="sandbox"), ProviderContext(data_dir=tmp_path)
    )
    call = TextCall(op, orjson.dumps(payload), payload, "sandbox-test", stream, include_usage)
    target = Target(provider, call.model, Timeouts(5, 60, 600), "sandbox/x")
    method = {"chat": provider.chat, "completions": provider.complete, "embeddings": provider.embed}[op]

    async def go() -> tuple[Reply, bytes]:
        reply = await method(call, target)
        if reply.stream is None:
            return reply, reply.body
        parts = [part async for part in reply.stream]
        assert all(p.startswith(b"data: ") and p.endswith(b"\n\n") for p in parts)
        return reply, b"".join(parts)

    return asyncio.run(go())


def body(tmp_path: Path, op: str, payload: dict[str, Any]) -> dict[str, Any]:
    reply, raw = run(tmp_path, op, payload)
    assert reply.status == 200 and reply.content_type == b"application/json"
    data: dict[str, Any] = orjson.loads(raw)
    return data


def events(raw: bytes) -> list[Any]:
    """The parsed `data:` payloads of an SSE body; `[DONE]` kept as the string."""
    out: list[Any] = []
    for block in raw.decode().split("\n\n"):
        if block:
            assert block.startswith("data: ")
            data = block[len("data: ") :]
            out.append(data if data == "[DONE]" else orjson.loads(data))
    return out


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "sandbox-test", "messages": [{"role": "user", "content": text}], **extra}


def without_ids(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ("id", "created")}


def validate(value: Any, schema: Any, root: Any = None) -> None:
    """A tiny JSON Schema validator: just the keywords the tests use. Raises AssertionError."""
    root = schema if root is None else root
    if not isinstance(schema, dict):
        return
    if "$ref" in schema:
        node = root
        for key in schema["$ref"].lstrip("#/").split("/"):
            node = node[key]
        validate(value, node, root)
    for sub in schema.get("allOf", []):
        validate(value, sub, root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            passed = sum(_passes(value, s, root) for s in schema[key])
            assert passed >= 1 if key == "anyOf" else passed == 1, (key, value)
    if "const" in schema:
        assert value == schema["const"]
    if "enum" in schema:
        assert value in schema["enum"], (value, schema["enum"])
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        assert any(_is_type(value, t) for t in types), (value, types)
    if isinstance(value, dict):
        _validate_object(value, schema, root)
    elif isinstance(value, list):
        _validate_array(value, schema, root)
    elif isinstance(value, str):
        _validate_string(value, schema)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(value, schema)


def _passes(value: Any, schema: Any, root: Any) -> bool:
    try:
        validate(value, schema, root)
    except AssertionError:
        return False
    return True


def _is_type(value: Any, kind: str) -> bool:
    checks = {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "null": value is None,
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
    }
    return checks[kind]


def _validate_object(value: dict[str, Any], schema: dict[str, Any], root: Any) -> None:
    props = schema.get("properties", {})
    for key in schema.get("required", []):
        assert key in value, f"missing required {key!r}"
    for key, item in value.items():
        if key in props:
            validate(item, props[key], root)
        elif schema.get("additionalProperties") is False:
            raise AssertionError(f"unexpected property {key!r}")
    assert len(value) >= schema.get("minProperties", 0)


def _validate_array(value: list[Any], schema: dict[str, Any], root: Any) -> None:
    assert len(value) >= schema.get("minItems", 0), value
    assert len(value) <= schema.get("maxItems", math.inf), value
    for item in value:
        validate(item, schema.get("items", {}), root)
    if schema.get("uniqueItems"):
        assert len({orjson.dumps(v) for v in value}) == len(value), value


def _validate_string(value: str, schema: dict[str, Any]) -> None:
    assert len(value) >= schema.get("minLength", 0), value
    assert len(value) <= schema.get("maxLength", math.inf), value
    if "pattern" in schema:
        assert re.search(schema["pattern"], value), (value, schema["pattern"])
    formats = {
        "date": r"^\d{4}-\d{2}-\d{2}$",
        "date-time": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$",
        "email": r"^[^@\s]+@[^@\s]+\.[^@\s]+$",
        "uri": r"^[a-z][a-z0-9+.-]*:\S+$",
        "uuid": r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    }
    if schema.get("format") in formats:
        assert re.match(formats[schema["format"]], value), (value, schema["format"])


def _validate_number(value: float, schema: dict[str, Any]) -> None:
    low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
    ex_low, ex_high = schema.get("exclusiveMinimum", -math.inf), schema.get("exclusiveMaximum", math.inf)
    if ex_low is True:  # draft 4: the flag makes `minimum` exclusive
        ex_low, low = low, -math.inf
    if ex_high is True:
        ex_high, high = high, math.inf
    assert low <= value <= high and ex_low < value < ex_high, (value, schema)
    if "multipleOf" in schema:
        quotient = value / schema["multipleOf"]
        assert int(quotient) == quotient, (value, schema["multipleOf"])


RICH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "Attendee": {
            "type": "object",
            "properties": {
                "email": {"type": "string", "format": "email"},
                "role": {"enum": ["organizer", "guest"]},
            },
            "required": ["email", "role"],
            "additionalProperties": False,
        }
    },
    "properties": {
        "title": {"type": "string", "minLength": 3, "maxLength": 40},
        "city": {"type": "string"},
        "date": {"type": "string", "format": "date"},
        "start": {"type": "string", "format": "date-time"},
        "duration_minutes": {"type": "integer", "exclusiveMinimum": 0, "maximum": 480, "multipleOf": 15},
        "priority": {"type": "string", "enum": ["low", "normal", "high"]},
        "budget": {"type": "number", "minimum": 10.5, "maximum": 99.5, "multipleOf": 0.01},
        "recurring": {"type": "boolean"},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 2,
            "uniqueItems": True,
        },
        "attendees": {"type": "array", "items": {"$ref": "#/$defs/Attendee"}, "minItems": 2},
        "location": {
            "type": "object",
            "properties": {
                "room": {"type": ["string", "null"]},
                "floor": {"type": "integer", "minimum": -2, "maximum": 40},
                "geo": {
                    "type": "object",
                    "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                    "required": ["lat", "lon"],
                },
            },
            "required": ["floor", "geo"],
        },
        "kind": {"const": "meeting"},
        "notes": {"anyOf": [{"type": "null"}, {"type": "string", "maxLength": 200}]},
        "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"},
        "link": {"type": "string", "format": "uri"},
    },
    "required": ["title", "date", "duration_minutes", "priority", "attendees", "location", "kind"],
    "additionalProperties": False,
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather forecast for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 10},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
        },
    },
}
EVENT_TOOL = {
    "type": "function",
    "function": {
        "name": "create_event",
        "description": "Schedule a meeting in the calendar",
        "parameters": RICH_SCHEMA,
    },
}
STOCK_TOOL = {
    "type": "function",
    "function": {
        "name": "get_stock_price",
        "description": "Look up a stock price by ticker symbol",
        "parameters": {
            "type": "object",
            "properties": {"ticker": {"type": "string"}},
            "required": ["ticker"],
        },
    },
}


def tool_args(data: dict[str, Any], index: int = 0) -> tuple[str, Any]:
    call = data["choices"][0]["message"]["tool_calls"][index]
    assert call["type"] == "function" and call["id"].startswith("call_")
    return call["function"]["name"], orjson.loads(call["function"]["arguments"])


# --- chat ------------------------------------------------------------------------------


def test_chat_reply_is_deterministic_and_quotes_the_user(tmp_path: Path) -> None:
    payload = chat("Tell me about zebras and their stripes")
    first, second = body(tmp_path, "chat", payload), body(tmp_path, "chat", payload)
    assert without_ids(first) == without_ids(second)
    assert first["id"] != second["id"] and first["id"].startswith("chatcmpl-")
    assert first["object"] == "chat.completion" and first["model"] == "sandbox-test"
    assert first["system_fingerprint"] == "fp_sandbox"
    choice = first["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["logprobs"] is None
    message = choice["message"]
    assert message["role"] == "assistant" and message["refusal"] is None and "tool_calls" not in message
    assert "zebras" in message["content"] and "stripes" in message["content"]
    usage = first["usage"]
    assert usage["prompt_tokens"] > 7 and usage["completion_tokens"] > 7
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_chat_reply_fills_reply_usage(tmp_path: Path) -> None:
    reply, raw = run(tmp_path, "chat", chat("count my tokens please"))
    usage = orjson.loads(raw)["usage"]
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )


def test_chat_multi_turn_mentions_turn_and_previous_reply(tmp_path: Path) -> None:
    first = body(tmp_path, "chat", chat("My favourite colour is teal"))["choices"][0]["message"]["content"]
    messages = [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "My favourite colour is teal"},
        {"role": "assistant", "content": first},
        {"role": "user", "content": "And my favourite animal is the otter"},
    ]
    content = body(tmp_path, "chat", {"messages": messages})["choices"][0]["message"]["content"]
    assert "otter" in content and "turn 2" in content
    assert "Earlier I said" in content and "teal" in content
    assert "terse" in content  # the system message is acknowledged


def test_chat_content_parts_and_attachments(tmp_path: Path) -> None:
    parts = [
        {"type": "text", "text": "What is in this picture of a lighthouse?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/b.png"}},
        {"type": "file", "file": {"file_id": "file-1"}},
    ]
    with_parts = body(tmp_path, "chat", {"messages": [{"role": "user", "content": parts}]})
    content = with_parts["choices"][0]["message"]["content"]
    assert "lighthouse" in content and "2 images and 1 file" in content
    text_only = body(tmp_path, "chat", chat("What is in this picture of a lighthouse?"))
    assert with_parts["usage"]["prompt_tokens"] > text_only["usage"]["prompt_tokens"] + 200


def test_chat_max_tokens_truncates_with_length(tmp_path: Path) -> None:
    full = body(tmp_path, "chat", chat("a fairly long question about distributed databases"))
    for key in ("max_tokens", "max_completion_tokens"):
        data = body(tmp_path, "chat", chat("a fairly long question about distributed databases", **{key: 5}))
        choice = data["choices"][0]
        assert choice["finish_reason"] == "length"
        assert data["usage"]["completion_tokens"] == 5
        assert full["choices"][0]["message"]["content"].startswith(choice["message"]["content"])
    roomy = body(
        tmp_path, "chat", chat("a fairly long question about distributed databases", max_tokens=1000)
    )
    assert roomy["choices"][0]["finish_reason"] == "stop"


def test_chat_stop_sequences_cut_the_reply(tmp_path: Path) -> None:
    data = body(tmp_path, "chat", chat("explain quantum tunnelling", stop=["Key words"]))
    content = data["choices"][0]["message"]["content"]
    assert "quantum" in content and "Key words" not in content
    assert data["choices"][0]["finish_reason"] == "stop"
    single = body(tmp_path, "chat", chat("explain quantum tunnelling", stop="tunnelling"))
    assert "tunnelling" not in single["choices"][0]["message"]["content"]


def test_chat_n_choices_differ_deterministically(tmp_path: Path) -> None:
    data = body(tmp_path, "chat", chat("give me three ideas", n=3))
    contents = [c["message"]["content"] for c in data["choices"]]
    assert [c["index"] for c in data["choices"]] == [0, 1, 2]
    assert len(set(contents)) == 3 and all("ideas" in c for c in contents)
    again = body(tmp_path, "chat", chat("give me three ideas", n=3))
    assert [c["message"]["content"] for c in again["choices"]] == contents


def test_tool_call_picks_best_tool_with_schema_valid_arguments(tmp_path: Path) -> None:
    payload = chat(
        "What's the weather forecast in Lisbon for the next 4 days, in fahrenheit?",
        tools=[STOCK_TOOL, WEATHER_TOOL, EVENT_TOOL],
    )
    data = body(tmp_path, "chat", payload)
    choice = data["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    name, args = tool_args(data)
    assert name == "get_weather"
    validate(args, WEATHER_TOOL["function"]["parameters"])  # type: ignore[index]
    assert args == {"city": "Lisbon", "days": 4, "unit": "fahrenheit"}
    assert without_ids(body(tmp_path, "chat", payload)) == without_ids(data)  # call ids included


def test_tool_call_arguments_valid_for_rich_schema(tmp_path: Path) -> None:
    payload = chat(
        "Schedule a meeting in Berlin on 2025-03-14 with high priority, budget 42.5",
        tools=[WEATHER_TOOL, EVENT_TOOL],
        tool_choice={"type": "function", "function": {"name": "create_event"}},
    )
    name, args = tool_args(body(tmp_path, "chat", payload))
    assert name == "create_event"
    validate(args, RICH_SCHEMA)
    assert set(args) == set(RICH_SCHEMA["properties"])  # every listed property is generated
    assert args["date"] == "2025-03-14" and args["priority"] == "high" and args["budget"] == 42.5
    assert args["city"] == "Berlin" and args["kind"] == "meeting"
    assert len(args["attendees"]) == 2 and args["attendees"][0]["role"] in ("organizer", "guest")


def test_tool_choice_none_and_required(tmp_path: Path) -> None:
    none = body(tmp_path, "chat", chat("weather in Oslo?", tools=[WEATHER_TOOL], tool_choice="none"))
    assert (
        none["choices"][0]["finish_reason"] == "stop" and "Oslo" in none["choices"][0]["message"]["content"]
    )
    required = body(tmp_path, "chat", chat("hello there", tools=[STOCK_TOOL], tool_choice="required"))
    assert tool_args(required)[0] == "get_stock_price"


def test_parallel_tool_calls_when_the_user_names_several_tools(tmp_path: Path) -> None:
    text = "Call get_weather for Paris and get_stock_price for ACME"
    both = body(tmp_path, "chat", chat(text, tools=[WEATHER_TOOL, STOCK_TOOL]))
    calls = both["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "get_stock_price"]
    assert len({c["id"] for c in calls}) == 2
    # Each call's arguments come from the part of the request that concerns it.
    assert orjson.loads(calls[0]["function"]["arguments"])["city"] == "Paris"
    assert orjson.loads(calls[1]["function"]["arguments"]) == {"ticker": "ACME"}
    one = body(tmp_path, "chat", chat(text, tools=[WEATHER_TOOL, STOCK_TOOL], parallel_tool_calls=False))
    assert len(one["choices"][0]["message"]["tool_calls"]) == 1


def test_a_tool_the_user_names_is_called_even_when_another_matches_more_words(tmp_path: Path) -> None:
    # Agents (Claude Code, Codex) offer tools whose long descriptions share many words with any
    # request; a user naming one tool outright gets that tool, as a model would call it.
    shell = {
        "type": "function",
        "function": {
            "name": "Bash",
            "description": "Runs a shell command: read a file, print the secret word, list notes, run tools",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
    read = {
        "type": "function",
        "function": {
            "name": "Read",
            "description": "Reads a file",
            "parameters": {
                "type": "object",
                "properties": {"file_path": {"type": "string"}},
                "required": ["file_path"],
            },
        },
    }
    text = 'Read the file_path "/srv/notes.txt" and tell me the secret word in the notes'
    for parallel in (True, False):
        data = body(tmp_path, "chat", chat(text, tools=[shell, read], parallel_tool_calls=parallel))
        assert len(data["choices"][0]["message"]["tool_calls"]) == 1
        assert tool_args(data) == ("Read", {"file_path": "/srv/notes.txt"})


def test_tool_result_round_trip(tmp_path: Path) -> None:
    first = body(tmp_path, "chat", chat("What's the weather in Rome?", tools=[WEATHER_TOOL]))
    call = first["choices"][0]["message"]["tool_calls"][0]
    messages = [
        {"role": "user", "content": "What's the weather in Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": '{"temperature": 23, "sky": "sunny"}'},
    ]
    data = body(tmp_path, "chat", {"messages": messages, "tools": [WEATHER_TOOL]})
    choice = data["choices"][0]
    assert choice["finish_reason"] == "stop" and "tool_calls" not in choice["message"]
    content = choice["message"]["content"]
    assert "get_weather" in content and "sunny" in content and "23" in content and "Rome" in content


def test_response_format_json_object_and_json_schema(tmp_path: Path) -> None:
    obj = body(tmp_path, "chat", chat("list planets", response_format={"type": "json_object"}))
    parsed = orjson.loads(obj["choices"][0]["message"]["content"])
    assert isinstance(parsed, dict) and "planets" in parsed["reply"]
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "sources": {"type": "array", "items": {"type": "string", "format": "uri"}, "maxItems": 3},
            "category": {"type": "string", "enum": ["science", "history"]},
        },
        "required": ["answer", "confidence", "sources", "category"],
        "additionalProperties": False,
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}
    data = body(tmp_path, "chat", chat("which planet has the most moons in history?", response_format=fmt))
    value = orjson.loads(data["choices"][0]["message"]["content"])
    validate(value, schema)
    assert "planet" in value["answer"] and value["category"] == "history"


def test_chat_stream_matches_non_streaming(tmp_path: Path) -> None:
    payload = chat("stream the words about river otters")
    plain = body(tmp_path, "chat", payload)
    for include_usage in (False, True):
        reply, raw = run(tmp_path, "chat", payload, stream=True, include_usage=include_usage)
        assert reply.content_type == b"text/event-stream" and reply.body == b""
        chunks = events(raw)
        assert chunks[-1] == "[DONE]"
        data = chunks[:-1]
        assert all(c["object"] == "chat.completion.chunk" and c["model"] == "sandbox-test" for c in data)
        assert len({c["id"] for c in data}) == 1
        assert data[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        if include_usage:
            assert data[-1]["choices"] == [] and data[-1]["usage"] == plain["usage"]
            data = data[:-1]
        assert all("usage" not in c for c in data)
        finish = data[-1]["choices"][0]
        assert finish["delta"] == {} and finish["finish_reason"] == "stop" and finish["logprobs"] is None
        middle = data[1:-1]
        assert len(middle) > 3 and all(c["choices"][0]["finish_reason"] is None for c in middle)
        text = "".join(c["choices"][0]["delta"]["content"] for c in middle)
        assert text == plain["choices"][0]["message"]["content"]
        assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (
            plain["usage"]["prompt_tokens"],
            plain["usage"]["completion_tokens"],
        )


def test_chat_stream_tool_call_fragments(tmp_path: Path) -> None:
    payload = chat("weather in Madrid in celsius", tools=[WEATHER_TOOL])
    plain = body(tmp_path, "chat", payload)
    reply, raw = run(tmp_path, "chat", payload, stream=True)
    chunks = events(raw)
    assert chunks[-1] == "[DONE]" and all("usage" not in c for c in chunks[:-1])
    deltas = [c["choices"][0]["delta"] for c in chunks[:-1]]
    assert deltas[0] == {"role": "assistant", "content": None}
    opening = deltas[1]["tool_calls"][0]
    expected = plain["choices"][0]["message"]["tool_calls"][0]
    assert opening["id"] == expected["id"] and opening["type"] == "function"
    assert opening["function"] == {"name": "get_weather", "arguments": ""}
    fragments = [d["tool_calls"][0] for d in deltas[2:-1]]
    assert len(fragments) > 1 and all(f["index"] == 0 and "id" not in f for f in fragments)
    assert "".join(f["function"]["arguments"] for f in fragments) == expected["function"]["arguments"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert reply.usage.completion_tokens == plain["usage"]["completion_tokens"]


# --- completions -----------------------------------------------------------------------


def test_completions_plain_echo_suffix_and_tokens(tmp_path: Path) -> None:
    data = body(tmp_path, "completions", {"prompt": "The old lighthouse keeper", "max_tokens": 200})
    assert data["object"] == "text_completion" and data["id"].startswith("cmpl-")
    choice = data["choices"][0]
    assert "lighthouse" in choice["text"] and choice["finish_reason"] == "stop" and choice["logprobs"] is None
    default = body(tmp_path, "completions", {"prompt": "The old lighthouse keeper"})
    assert default["choices"][0]["finish_reason"] == "length" and default["usage"]["completion_tokens"] == 16
    echo = body(
        tmp_path, "completions", {"prompt": "The old lighthouse keeper", "echo": True, "max_tokens": 200}
    )
    assert echo["choices"][0]["text"] == "The old lighthouse keeper" + choice["text"]
    assert echo["usage"] == data["usage"]
    suffix = body(
        tmp_path, "completions", {"prompt": "Dear Sam,", "suffix": "Regards, Alex", "max_tokens": 100}
    )
    assert "Regards" in suffix["choices"][0]["text"]
    tokens = body(tmp_path, "completions", {"prompt": [[11, 22, 33], [44]], "n": 2, "max_tokens": 100})
    assert [c["index"] for c in tokens["choices"]] == [0, 1, 2, 3]
    assert "tok22" in tokens["choices"][0]["text"] and "tok44" in tokens["choices"][2]["text"]
    assert tokens["choices"][0]["text"] != tokens["choices"][1]["text"]
    assert tokens["usage"]["prompt_tokens"] == 4
    stop = body(
        tmp_path, "completions", {"prompt": "The old lighthouse keeper", "stop": ["."], "max_tokens": 100}
    )
    assert "." not in stop["choices"][0]["text"] and stop["choices"][0]["finish_reason"] == "stop"


def test_completions_stream(tmp_path: Path) -> None:
    payload = {"prompt": ["alpha beta", "gamma delta"], "max_tokens": 50, "echo": True}
    plain = body(tmp_path, "completions", payload)
    for include_usage in (False, True):
        reply, raw = run(tmp_path, "completions", payload, stream=True, include_usage=include_usage)
        chunks = events(raw)
        assert chunks[-1] == "[DONE]"
        data = chunks[:-1]
        if include_usage:
            assert data[-1]["choices"] == [] and data[-1]["usage"] == plain["usage"]
            data = data[:-1]
        assert all(c["object"] == "text_completion" and "usage" not in c for c in data)
        for choice in plain["choices"]:
            mine = [c["choices"][0] for c in data if c["choices"][0]["index"] == choice["index"]]
            assert "".join(m["text"] for m in mine) == choice["text"]
            assert mine[-1]["finish_reason"] == choice["finish_reason"]
            assert all(m["finish_reason"] is None for m in mine[:-1])
        assert reply.usage.completion_tokens == plain["usage"]["completion_tokens"]


# --- embeddings ------------------------------------------------------------------------


def embed(tmp_path: Path, inputs: Any, **extra: Any) -> list[list[float]]:
    data = body(tmp_path, "embeddings", {"input": inputs, **extra})
    assert data["object"] == "list" and data["model"] == "sandbox-test"
    assert [d["index"] for d in data["data"]] == list(range(len(data["data"])))
    assert data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] > 0
    out = []
    for item in data["data"]:
        assert item["object"] == "embedding"
        vec = item["embedding"]
        if isinstance(vec, str):
            packed = array("f")
            packed.frombytes(base64.b64decode(vec))
            if sys.byteorder == "big":
                packed.byteswap()
            vec = packed.tolist()
        out.append(vec)
    return out


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))  # the vectors are unit length


def test_embeddings_float_and_base64_agree(tmp_path: Path) -> None:
    texts = ["the cat sat on the mat", "hello world"]
    floats = embed(tmp_path, texts, encoding_format="float")
    encoded = embed(tmp_path, texts, encoding_format="base64")
    assert floats == encoded and embed(tmp_path, texts) == floats
    assert all(len(v) == 256 for v in floats)
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-5 for v in floats)
    assert embed(tmp_path, "the cat sat on the mat")[0] == floats[0]


def test_embeddings_dimensions_and_token_inputs(tmp_path: Path) -> None:
    assert [len(v) for v in embed(tmp_path, ["short", "texts"], dimensions=64)] == [64, 64]
    assert len(embed(tmp_path, "x", dimensions=3072)[0]) == 3072
    ids = embed(tmp_path, [[1, 2, 3], [1, 2, 4]])
    assert len(ids) == 2 and ids[0] != ids[1]
    assert embed(tmp_path, [1, 2, 3]) == ids[:1]


def test_embeddings_similarity_ordering(tmp_path: Path) -> None:
    base, near, far = embed(
        tmp_path, ["the cat sat on the mat", "a cat sat on a mat", "quarterly revenue grew"]
    )
    assert cosine(base, near) > 0.5 > cosine(base, far)
    cats, kitten, finance = embed(tmp_path, ["cats", "cat", "finance"])
    assert cosine(cats, kitten) > cosine(cats, finance)  # shared trigrams count


# --- schema values ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "minimum": 5, "exclusiveMaximum": 6},
        {"type": "integer", "minimum": 0, "maximum": 100, "exclusiveMinimum": True},  # draft 4
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5},
        {"type": "number", "minimum": 0.1, "multipleOf": 0.1},
        {"type": "integer", "minimum": 7, "multipleOf": 5, "maximum": 14},
        {"type": "string", "minLength": 12},
        {"type": "string", "maxLength": 2},
        {"type": "string", "pattern": "^[0-9]+$"},
        {"type": "string", "pattern": "^(?:foo|bar)_\\d{2,4}$"},
        {"type": "string", "pattern": "^[^0-9\\s]+-[a-f0-9]{6}$", "maxLength": 20},
        {"type": "string", "pattern": "^\\w+@\\w+\\.com$"},
        {"type": "string", "format": "uuid"},
        {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 3, "uniqueItems": True},
        {"type": "array", "items": {"type": "integer"}, "minItems": 4, "uniqueItems": True},
        {"type": ["null", "boolean"]},
        {"type": "string", "nullable": True},
        {
            "oneOf": [
                {"type": "null"},
                {"type": "object", "properties": {"x": {"const": 1}}, "required": ["x"]},
            ]
        },
        {"allOf": [{"properties": {"a": {"type": "string"}}}, {"required": ["a", "b"]}]},
        {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}},
        {
            "$ref": "#/definitions/node",
            "definitions": {
                "node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/node"}}}
            },
        },
        {},
    ],
)
def test_example_value_is_valid(schema: dict[str, Any]) -> None:
    value = example_value(schema, "some words here")
    validate(value, schema)
    assert example_value(schema, "some words here") == value
    orjson.dumps(value)


@pytest.mark.parametrize(
    "schema",
    [
        None,
        [],
        "string",
        {"type": 5},
        {"properties": []},
        {"required": True},
        {"enum": []},
        {"$ref": "#/nowhere"},
        {"$ref": "#"},
        {"anyOf": [{"$ref": "#"}]},
        {"allOf": [{"$ref": "#"}]},
        {"type": "object", "properties": {"me": {"$ref": "#"}}, "required": ["me"]},
        {"type": "number", "minimum": 10**400},
        {"type": "string", "pattern": "(unclosed"},
    ],
)
def test_example_value_tolerates_malformed_schemas(schema: Any) -> None:
    orjson.dumps(example_value(schema, "text"))


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "payload", "param"),
    [
        ("chat", {"messages": []}, "messages"),
        ("chat", {"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        (
            "chat",
            {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "messages[0].content[0].text",
        ),
        ("chat", {"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
        ("chat", {"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
        ("chat", chat("x", n=0), "n"),
        ("chat", chat("x", n=9), "n"),
        ("chat", chat("x", n=True), "n"),
        ("chat", chat("x", max_tokens=0), "max_tokens"),
        ("chat", chat("x", max_completion_tokens="5"), "max_completion_tokens"),
        ("chat", chat("x", stop=["a", "b", "c", "d", "e"]), "stop"),
        ("chat", chat("x", stop=5), "stop"),
        ("chat", chat("x", tools={"type": "function"}), "tools"),
        ("chat", chat("x", tools=[{"type": "custom", "custom": {"name": "c"}}]), "tools[0]"),
        (
            "chat",
            chat("x", tools=[{"type": "function", "function": {"name": "bad name"}}]),
            "tools[0].function.name",
        ),
        (
            "chat",
            chat("x", tools=[WEATHER_TOOL], tool_choice={"type": "function", "function": {"name": "nope"}}),
            "tool_choice",
        ),
        ("chat", chat("x", tool_choice="required"), "tool_choice"),
        ("chat", chat("x", tools=[WEATHER_TOOL], parallel_tool_calls="yes"), "parallel_tool_calls"),
        ("chat", chat("x", response_format={"type": "yaml"}), "response_format.type"),
        (
            "chat",
            chat("x", response_format={"type": "json_schema", "json_schema": {"schema": 3}}),
            "response_format.json_schema.schema",
        ),
        ("completions", {"prompt": []}, "prompt"),
        ("completions", {"prompt": [1, "a"]}, "prompt"),
        ("completions", {"prompt": [[1, -2]]}, "prompt[0]"),
        ("completions", {"prompt": "x", "max_tokens": -1}, "max_tokens"),
        ("completions", {"prompt": "x", "echo": "yes"}, "echo"),
        ("completions", {"prompt": "x", "suffix": 3}, "suffix"),
        ("embeddings", {"input": ""}, "input"),
        ("embeddings", {"input": []}, "input"),
        ("embeddings", {"input": ["ok", ""]}, "input[1]"),
        ("embeddings", {"input": None}, "input"),
        ("embeddings", {"input": [[]]}, "input[0]"),
        ("embeddings", {"input": "x", "dimensions": 0}, "dimensions"),
        ("embeddings", {"input": "x", "dimensions": 3073}, "dimensions"),
        ("embeddings", {"input": "x", "dimensions": "8"}, "dimensions"),
        ("embeddings", {"input": "x", "encoding_format": "int8"}, "encoding_format"),
    ],
)
def test_bad_input_raises_invalid_request(
    tmp_path: Path, op: str, payload: dict[str, Any], param: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        run(tmp_path, op, payload)
    assert caught.value.param == param and caught.value.status == 400


# --- wire shapes -----------------------------------------------------------------------


def test_replies_parse_as_openai_sdk_types(tmp_path: Path) -> None:
    types = pytest.importorskip("openai.types")
    chat_types = pytest.importorskip("openai.types.chat")
    for payload in (chat("hello there"), chat("weather in Rome", tools=[WEATHER_TOOL])):
        chat_types.ChatCompletion.model_validate(body(tmp_path, "chat", payload))
        _, raw = run(tmp_path, "chat", payload, stream=True, include_usage=True)
        for chunk in events(raw)[:-1]:
            chat_types.ChatCompletionChunk.model_validate(chunk)
    types.Completion.model_validate(body(tmp_path, "completions", {"prompt": "hi", "n": 2}))
    types.CreateEmbeddingResponse.model_validate(body(tmp_path, "embeddings", {"input": ["hi", "there"]}))


def test_schema_minimums_beyond_the_sandboxs_bounds_are_refused_at_once() -> None:
    import time

    from unigate_sandbox.schema_values import Budget

    for schema, words in [
        ({"type": "object", "minProperties": 1_000_000}, "minProperties 1000000"),
        ({"type": "array", "minItems": 3_000_000}, "minItems 3000000"),
        ({"type": "string", "minLength": 10**9}, "minLength 1000000000"),
        ({"type": "array", "minItems": 1000, "items": {"type": "array", "minItems": 1000}}, "5000 values"),
    ]:
        started = time.perf_counter()
        with pytest.raises(InvalidRequest) as caught:
            example_value(schema, "x", "tools")
        assert time.perf_counter() - started < 0.5
        assert caught.value.param == "tools" and words in caught.value.message
    # One budget spans every value of a reply: many modest schemas cannot add up.
    budget = Budget()
    modest = {"type": "array", "minItems": 1000, "items": {"type": "integer"}}
    for _ in range(4):
        example_value(modest, "", budget=budget)
    with pytest.raises(InvalidRequest):
        example_value(modest, "", budget=budget)
    assert len(example_value(modest, "")) == 1000  # alone it is fine
