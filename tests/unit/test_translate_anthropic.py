"""OpenAI chat ⇄ Anthropic Messages translation: requests, responses, and byte-split streams."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from typing import Any, Protocol

import orjson
import pytest

from unigate.errors import InvalidRequest, UpstreamFailed
from unigate.translate.anthropic import (
    DEFAULT_MAX_TOKENS,
    AnthropicToOpenAIStream,
    OpenAIToAnthropicStream,
    anthropic_to_openai_request,
    anthropic_to_openai_response,
    openai_to_anthropic_request,
    openai_to_anthropic_response,
)
from unigate.translate.sse import SSEParser

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _rich_openai_request() -> dict[str, Any]:
    return {
        "model": "claude-alias",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "developer", "content": [{"type": "text", "text": "Answer in English."}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in these pictures?"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                ],
            },
            {"role": "assistant", "content": "A cat and a dog."},
            {"role": "user", "content": "Check the weather in Paris and Tokyo."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "toolu_01",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "toolu_02",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Tokyo"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "toolu_01", "content": "18C sunny"},
            {"role": "tool", "tool_call_id": "toolu_02", "content": "25C rain"},
            {"role": "user", "content": "Thanks. And tomorrow?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather now",
                    "parameters": WEATHER_SCHEMA,
                },
            }
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "stop": ["END"],
        "max_completion_tokens": 512,
        "temperature": 0.5,
        "top_p": 0.9,
        "stream": True,
        "user": "user-42",
    }


# ---------------------------------------------------------------- requests


def test_openai_to_anthropic_rich_conversation() -> None:
    payload = _rich_openai_request()
    original = copy.deepcopy(payload)
    out = openai_to_anthropic_request(payload, "claude-sonnet-4-5")
    assert payload == original  # input is not mutated
    assert out["model"] == "claude-sonnet-4-5"
    assert out["system"] == "You are terse.\n\nAnswer in English."
    assert out["max_tokens"] == 512
    assert out["stop_sequences"] == ["END"]
    assert (out["temperature"], out["top_p"], out["stream"]) == (0.5, 0.9, True)
    assert out["metadata"] == {"user_id": "user-42"}
    assert out["tools"] == [
        {"name": "get_weather", "description": "Weather now", "input_schema": WEATHER_SCHEMA}
    ]
    assert out["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert out["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these pictures?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
            ],
        },
        {"role": "assistant", "content": "A cat and a dog."},
        {"role": "user", "content": "Check the weather in Paris and Tokyo."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"city": "Tokyo"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18C sunny"},
                {"type": "tool_result", "tool_use_id": "toolu_02", "content": "25C rain"},
                {"type": "text", "text": "Thanks. And tomorrow?"},
            ],
        },
    ]
    roles = [m["role"] for m in out["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles))


def test_request_round_trip_openai_anthropic_openai() -> None:
    payload = _rich_openai_request()
    back = anthropic_to_openai_request(openai_to_anthropic_request(payload, "claude-sonnet-4-5"))
    assert back["model"] == "claude-sonnet-4-5"
    assert back["messages"][0] == {"role": "system", "content": "You are terse.\n\nAnswer in English."}
    # Everything after the system messages survives exactly (tool results come back as tool messages).
    assert back["messages"][1:] == payload["messages"][2:]
    assert back["tools"] == payload["tools"]
    assert back["tool_choice"] == "auto"
    assert back["parallel_tool_calls"] is False
    assert back["stop"] == ["END"]
    assert back["max_tokens"] == 512
    assert back["user"] == "user-42"
    assert back["stream"] is True and back["stream_options"] == {"include_usage": True}


def test_request_round_trip_anthropic_openai_anthropic() -> None:
    anthropic: dict[str, Any] = {
        "model": "claude-x",
        "max_tokens": 1000,
        "system": [{"type": "text", "text": "Be kind."}],
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Oslo"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "-3C"}],
            },
        ],
        "tools": [{"name": "get_weather", "input_schema": WEATHER_SCHEMA}],
        "tool_choice": {"type": "tool", "name": "get_weather"},
        "stop_sequences": ["\n\nHuman:"],
        "temperature": 0.2,
        "metadata": {"user_id": "u1"},
    }
    openai = anthropic_to_openai_request(anthropic)
    assert openai["messages"][0] == {"role": "system", "content": "Be kind."}
    assert openai["messages"][2]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city":"Oslo"}',
    }
    assert openai["messages"][3] == {"role": "tool", "tool_call_id": "toolu_9", "content": "-3C"}
    assert openai["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    back = openai_to_anthropic_request(openai, "claude-x")
    assert back["system"] == "Be kind."
    assert back["messages"][0] == anthropic["messages"][0]
    assert back["messages"][1] == anthropic["messages"][1]
    assert back["messages"][2] == anthropic["messages"][2]
    for key in ("max_tokens", "tool_choice", "stop_sequences", "temperature", "metadata"):
        assert back[key] == anthropic[key]
    assert back["tools"] == [{"name": "get_weather", "input_schema": WEATHER_SCHEMA}]


def test_anthropic_images_and_tool_result_errors_to_openai() -> None:
    payload = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"},
                    },
                    {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
                    {"type": "text", "text": "Describe."},
                ],
            },
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "boom"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "Try again."},
                ],
            },
        ],
    }
    out = anthropic_to_openai_request(payload)
    assert out["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
        {"type": "text", "text": "Describe."},
    ]
    assert out["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }
    assert out["messages"][2] == {"role": "tool", "tool_call_id": "t1", "content": "Error: boom"}
    assert out["messages"][3] == {"role": "user", "content": "Try again."}


@pytest.mark.parametrize(
    ("openai_choice", "anthropic_choice", "back"),
    [
        ("auto", {"type": "auto"}, "auto"),
        ("none", {"type": "none"}, "none"),
        ("required", {"type": "any"}, "required"),
        (
            {"type": "function", "function": {"name": "get_weather"}},
            {"type": "tool", "name": "get_weather"},
            {"type": "function", "function": {"name": "get_weather"}},
        ),
    ],
)
def test_tool_choice_forms(openai_choice: Any, anthropic_choice: dict[str, Any], back: Any) -> None:
    payload = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
        "tool_choice": openai_choice,
    }
    out = openai_to_anthropic_request(payload, "claude")
    assert out["tool_choice"] == anthropic_choice
    assert out["tools"][0]["input_schema"] == {"type": "object", "properties": {}}
    assert anthropic_to_openai_request(out)["tool_choice"] == back


def test_defaults_and_single_stop_and_temperature_clamp() -> None:
    out = openai_to_anthropic_request(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stop": "x", "temperature": 1.7},
        "claude",
    )
    assert out == {
        "model": "claude",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": [{"role": "user", "content": "hi"}],
        "stop_sequences": ["x"],
        "temperature": 1.0,
    }
    legacy = openai_to_anthropic_request(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 7}, "c"
    )
    assert legacy["max_tokens"] == 7


@pytest.mark.parametrize(
    ("fmt", "needle"),
    [
        ({"type": "json_object"}, "valid JSON object"),
        ({"type": "json_schema", "json_schema": {"name": "w", "schema": WEATHER_SCHEMA}}, '"city"'),
    ],
)
def test_response_format_becomes_system_instruction(fmt: dict[str, Any], needle: str) -> None:
    payload = {
        "model": "m",
        "messages": [{"role": "system", "content": "Sys."}, {"role": "user", "content": "hi"}],
        "response_format": fmt,
    }
    system = openai_to_anthropic_request(payload, "c")["system"]
    assert system.startswith("Sys.\n\n")
    assert needle in system


def test_consecutive_user_messages_are_merged() -> None:
    payload = {"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    assert openai_to_anthropic_request(payload, "c")["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


@pytest.mark.parametrize(
    "bad",
    [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{nope"}}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1]"}}],
        },
        {
            "role": "user",
            "content": [{"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}}],
        },
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}]},
        {"role": "function", "name": "f", "content": "x"},
        {"role": "tool", "content": "no id"},
    ],
)
def test_untranslatable_requests_raise(bad: dict[str, Any]) -> None:
    payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}, bad]}
    with pytest.raises(InvalidRequest):
        openai_to_anthropic_request(payload, "c")


def test_n_greater_than_one_is_rejected() -> None:
    with pytest.raises(InvalidRequest):
        openai_to_anthropic_request(
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 2}, "c"
        )


# ---------------------------------------------------------------- responses

ANTHROPIC_TOOL_REPLY: dict[str, Any] = {
    "id": "msg_01AbC",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_01XyZ", "name": "get_weather", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_read_input_tokens": 30,
        "cache_creation_input_tokens": 5,
    },
}


def test_anthropic_to_openai_response_with_tool_call_and_cache_usage() -> None:
    out = anthropic_to_openai_response(ANTHROPIC_TOOL_REPLY, "my-claude")
    assert out["id"] == "chatcmpl-01AbC"
    assert out["object"] == "chat.completion"
    assert out["model"] == "my-claude"
    assert isinstance(out["created"], int)
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Checking."
    assert choice["message"]["tool_calls"] == [
        {
            "id": "toolu_01XyZ",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        }
    ]
    assert out["usage"] == {
        "prompt_tokens": 135,
        "completion_tokens": 20,
        "total_tokens": 155,
        "prompt_tokens_details": {"cached_tokens": 30},
    }


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
    ],
)
def test_stop_reason_mapping(stop: str, finish: str) -> None:
    body = {
        "id": "msg_1",
        "content": [{"type": "text", "text": "x"}],
        "stop_reason": stop,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    assert anthropic_to_openai_response(body, "m")["choices"][0]["finish_reason"] == finish
    back_stop = "end_turn" if stop == "stop_sequence" else stop
    openai = {
        "id": "chatcmpl-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": finish}],
    }
    assert openai_to_anthropic_response(openai, "m")["stop_reason"] == back_stop


def test_openai_to_anthropic_response_with_tool_calls() -> None:
    body = {
        "id": "chatcmpl-Zz9",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-x",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Sure.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a": 1}'},
                        },
                        {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": ""}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": 50,
            "completion_tokens": 9,
            "total_tokens": 59,
            "prompt_tokens_details": {"cached_tokens": 10},
        },
    }
    out = openai_to_anthropic_response(body, "claude-alias")
    assert out == {
        "id": "msg_Zz9",
        "type": "message",
        "role": "assistant",
        "model": "claude-alias",
        "content": [
            {"type": "text", "text": "Sure."},
            {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}},
            {"type": "tool_use", "id": "call_2", "name": "g", "input": {}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 40,
            "output_tokens": 9,
            "cache_read_input_tokens": 10,
            "cache_creation_input_tokens": 0,
        },
    }


def test_response_round_trip_keeps_ids_text_and_tools() -> None:
    openai = anthropic_to_openai_response(ANTHROPIC_TOOL_REPLY, "m")
    back = openai_to_anthropic_response(openai, "m")
    assert back["id"] == "msg_01AbC"
    assert back["content"] == ANTHROPIC_TOOL_REPLY["content"][1:]  # thinking has no OpenAI slot
    assert back["stop_reason"] == "tool_use"
    assert back["usage"]["output_tokens"] == 20
    assert back["usage"]["cache_read_input_tokens"] == 30


def test_upstream_invalid_tool_arguments_fail_as_upstream_error() -> None:
    body = {
        "choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{"}}]}}]
    }
    with pytest.raises(UpstreamFailed):
        openai_to_anthropic_response(body, "m")


# ---------------------------------------------------------------- stream fixtures


def _anthropic_sse(events: list[dict[str, Any]], newline: str = "\n") -> bytes:
    # Spaced JSON like Anthropic's own servers send, to prove nothing depends on compact output.
    parts = [
        f"event: {e['type']}{newline}data: {json.dumps(e, ensure_ascii=False)}{newline}{newline}"
        for e in events
    ]
    return "".join(parts).encode()


def _message_start(input_tokens: int = 25) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": "msg_01Stream",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "cache_read_input_tokens": 0, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}


def _text_events(chunks: list[str], *, pings: bool = False) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        _message_start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    if pings:
        events.append({"type": "ping"})
    for chunk in chunks:
        events.append(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": chunk}}
        )
        if pings:
            events.append({"type": "ping"})
    events += [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 12},
        },
        {"type": "message_stop"},
    ]
    return events


def _tool_events() -> list[dict[str, Any]]:
    def tool(index: int, tool_id: str, fragments: list[str]) -> list[dict[str, Any]]:
        start = {"type": "tool_use", "id": tool_id, "name": "get_weather", "input": {}}
        out: list[dict[str, Any]] = [{"type": "content_block_start", "index": index, "content_block": start}]
        for frag in fragments:
            out.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": frag},
                }
            )
        return [*out, {"type": "content_block_stop", "index": index}]

    return [
        _message_start(472),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me check."}},
        {"type": "content_block_stop", "index": 0},
        *tool(1, "toolu_01A", ["", '{"ci', 'ty": "Pa', 'ris"}']),
        {"type": "ping"},
        *tool(2, "toolu_01B", ['{"city":', ' "東京"}']),
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 89},
        },
        {"type": "message_stop"},
    ]


TEXT_STREAM = _anthropic_sse(_text_events(["Hello", ", wor", "ld!"]))
PING_STREAM = _anthropic_sse(_text_events(["One ", "two ", "three."], pings=True))
UNICODE_STREAM = _anthropic_sse(_text_events(["hé", "llo 世", "界 🎵"]), newline="\r\n")
TOOL_STREAM = _anthropic_sse(_tool_events())


class _Translator(Protocol):
    broken: bool
    prompt_tokens: int
    completion_tokens: int

    def feed(self, data: bytes) -> bytes: ...
    def finish(self) -> bytes: ...


def _run(make: Callable[[], _Translator], pieces: list[bytes]) -> tuple[bytes, _Translator]:
    translator = make()
    out = b"".join(translator.feed(piece) for piece in pieces)
    return out + translator.finish(), translator


def _assert_split_invariant(make: Callable[[], _Translator], data: bytes) -> bytes:
    """Every two-piece split and byte-by-byte feeding give exactly the whole-feed output."""
    whole, _ = _run(make, [data])
    for cut in range(len(data) + 1):
        split, _ = _run(make, [data[:cut], data[cut:]])
        assert split == whole, f"split at byte {cut} changed the output"
    bytewise, _ = _run(make, [data[i : i + 1] for i in range(len(data))])
    assert bytewise == whole
    return whole


def _openai_events(out: bytes) -> list[Any]:
    assert out.endswith(b"\n\n")
    events = []
    for raw in out[:-2].split(b"\n\n"):
        assert raw.startswith(b"data: ")
        body = raw[6:]
        events.append("[DONE]" if body == b"[DONE]" else orjson.loads(body))
    return events


def _openai_text(events: list[Any]) -> str:
    return "".join(
        e["choices"][0]["delta"].get("content") or ""
        for e in events
        if isinstance(e, dict) and e.get("choices")
    )


def _openai_tool_args(events: list[Any]) -> dict[int, dict[str, Any]]:
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        if not isinstance(event, dict) or not event.get("choices"):
            continue
        for call in event["choices"][0]["delta"].get("tool_calls") or []:
            slot = calls.setdefault(call["index"], {"id": None, "name": None, "arguments": ""})
            slot["id"] = call.get("id") or slot["id"]
            slot["name"] = call.get("function", {}).get("name") or slot["name"]
            slot["arguments"] += call.get("function", {}).get("arguments") or ""
    return calls


def _a2o(include_usage: bool = True) -> Callable[[], _Translator]:
    return lambda: AnthropicToOpenAIStream("my-claude", include_usage, created=1700000000)


@pytest.mark.parametrize(
    ("stream", "text"),
    [(TEXT_STREAM, "Hello, world!"), (PING_STREAM, "One two three."), (UNICODE_STREAM, "héllo 世界 🎵")],
    ids=["text", "pings", "unicode-crlf"],
)
def test_anthropic_to_openai_text_streams_split_everywhere(stream: bytes, text: str) -> None:
    out = _assert_split_invariant(_a2o(), stream)
    events = _openai_events(out)
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(e["id"] == "chatcmpl-01Stream" and e["model"] == "my-claude" for e in events[:-1])
    assert _openai_text(events) == text
    assert events[-3]["choices"][0]["finish_reason"] == "stop"
    assert events[-2]["choices"] == []
    assert events[-2]["usage"] == {
        "prompt_tokens": 25,
        "completion_tokens": 12,
        "total_tokens": 37,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    assert events[-1] == "[DONE]"
    _, translator = _run(_a2o(), [stream])
    assert (translator.prompt_tokens, translator.completion_tokens, translator.broken) == (25, 12, False)


def test_anthropic_to_openai_tool_stream_split_everywhere() -> None:
    out = _assert_split_invariant(_a2o(include_usage=False), TOOL_STREAM)
    events = _openai_events(out)
    assert _openai_text(events) == "Let me check."
    calls = _openai_tool_args(events)
    assert calls == {
        0: {"id": "toolu_01A", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        1: {"id": "toolu_01B", "name": "get_weather", "arguments": '{"city": "東京"}'},
    }
    assert json.loads(calls[1]["arguments"]) == {"city": "東京"}
    # The first fragment of each call carries id, type, name and empty arguments.
    first = next(
        e for e in events if isinstance(e, dict) and e["choices"] and "tool_calls" in e["choices"][0]["delta"]
    )
    assert first["choices"][0]["delta"]["tool_calls"][0] == {
        "index": 0,
        "id": "toolu_01A",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert events[-1] == "[DONE]"  # no usage chunk without include_usage


def test_anthropic_to_openai_broken_stream_ends_with_error() -> None:
    cut = TEXT_STREAM[: TEXT_STREAM.index(b"event: message_delta")]
    out, translator = _run(_a2o(), [cut])
    events = _openai_events(out)
    assert translator.broken
    assert _openai_text(events) == "Hello, world!"
    assert "error" in events[-1] and events[-1]["error"]["message"]
    assert "[DONE]" not in events


def test_anthropic_to_openai_error_event_is_relayed_in_band() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    stream = _anthropic_sse([_message_start(), error])
    out = _assert_split_invariant(_a2o(), stream)
    events = _openai_events(out)
    assert events[-1]["error"]["message"] == "Overloaded"
    assert events[-1]["error"]["type"] == "overloaded_error"
    _, translator = _run(_a2o(), [stream])
    assert translator.broken


# ---------------------------------------------------------------- OpenAI -> Anthropic streams


def _openai_sse(chunks: list[dict[str, Any]], *, done: bool = True) -> bytes:
    head = {"id": "chatcmpl-Up1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x"}
    events = [b"data: " + json.dumps({**head, **c}, ensure_ascii=False).encode() + b"\n\n" for c in chunks]
    return b"".join(events) + (b"data: [DONE]\n\n" if done else b"")


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


OPENAI_USAGE = {"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 7, "total_tokens": 47}}
OPENAI_TEXT_STREAM = _openai_sse(
    [
        _delta({"role": "assistant", "content": ""}),
        _delta({"content": "hé"}),
        _delta({"content": "llo 世"}),
        _delta({"content": "界 🎵"}),
        _delta({}, "stop"),
        OPENAI_USAGE,
    ]
)


def _tc(index: int, args: str, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if call_id:
        call.update(id=call_id, type="function")
        call["function"]["name"] = name
    return _delta({"tool_calls": [call]})


OPENAI_TOOL_STREAM = _openai_sse(
    [
        _delta({"role": "assistant", "content": None}),
        _delta({"content": "Checking."}),
        _tc(0, "", "call_A", "get_weather"),
        _tc(0, '{"city"'),
        _tc(0, ': "Paris"}'),
        _tc(1, '{"city": "Tokyo"}', "call_B", "get_weather"),
        _delta({}, "tool_calls"),
        OPENAI_USAGE,
    ]
)


def _anthropic_events(out: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for raw in out[:-2].split(b"\n\n"):
        name_line, data_line = raw.split(b"\n")
        assert name_line.startswith(b"event: ") and data_line.startswith(b"data: ")
        data = orjson.loads(data_line[6:])
        assert data["type"] == name_line[7:].decode()  # the SDK needs both, and they must agree
        events.append((data["type"], data))
    return events


def _o2a() -> _Translator:
    return OpenAIToAnthropicStream("claude-alias")


def test_openai_to_anthropic_text_stream_split_everywhere() -> None:
    out = _assert_split_invariant(_o2a, OPENAI_TEXT_STREAM)
    events = _anthropic_events(out)
    kinds = [kind for kind, _ in events]
    assert kinds == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    message = events[0][1]["message"]
    assert (message["id"], message["model"], message["content"]) == ("msg_Up1", "claude-alias", [])
    assert "".join(d["delta"]["text"] for k, d in events if k == "content_block_delta") == "héllo 世界 🎵"
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert events[-2][1]["usage"] == {"input_tokens": 40, "output_tokens": 7}
    _, translator = _run(_o2a, [OPENAI_TEXT_STREAM])
    assert (translator.prompt_tokens, translator.completion_tokens, translator.broken) == (40, 7, False)


def test_openai_to_anthropic_tool_stream_split_everywhere() -> None:
    out = _assert_split_invariant(_o2a, OPENAI_TOOL_STREAM)
    events = _anthropic_events(out)
    starts = [d for k, d in events if k == "content_block_start"]
    assert [s["content_block"] for s in starts] == [
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "call_A", "name": "get_weather", "input": {}},
        {"type": "tool_use", "id": "call_B", "name": "get_weather", "input": {}},
    ]
    assert [s["index"] for s in starts] == [0, 1, 2]
    json_parts: dict[int, str] = {}
    for kind, data in events:
        if kind == "content_block_delta" and data["delta"]["type"] == "input_json_delta":
            json_parts[data["index"]] = json_parts.get(data["index"], "") + data["delta"]["partial_json"]
    assert {i: json.loads(s) for i, s in json_parts.items()} == {1: {"city": "Paris"}, 2: {"city": "Tokyo"}}
    assert [d["index"] for k, d in events if k == "content_block_stop"] == [0, 1, 2]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_openai_to_anthropic_broken_stream_ends_with_error() -> None:
    cut = _openai_sse(
        [_delta({"role": "assistant", "content": ""}), _delta({"content": "partial"})], done=False
    )
    out = _assert_split_invariant(_o2a, cut)
    events = _anthropic_events(out)
    assert events[-1][0] == "error"
    assert events[-1][1]["error"]["type"] == "api_error"
    assert "message_stop" not in [k for k, _ in events]
    _, translator = _run(_o2a, [cut])
    assert translator.broken


def test_openai_to_anthropic_error_chunk_becomes_error_event() -> None:
    stream = (
        _openai_sse([_delta({"content": "x"})], done=False)
        + b'data: {"error": {"message": "boom", "type": "rate_limit_error"}}\n\n'
    )
    out, translator = _run(_o2a, [stream])
    events = _anthropic_events(out)
    assert events[-1] == (
        "error",
        {"type": "error", "error": {"type": "rate_limit_error", "message": "boom"}},
    )
    assert translator.broken


def test_streams_compose_back_to_the_same_content() -> None:
    openai_out, _ = _run(_a2o(), [TOOL_STREAM])
    anthropic_out = _assert_split_invariant(_o2a, openai_out)
    events = _anthropic_events(anthropic_out)
    assert events[0][1]["message"]["id"] == "msg_01Stream"
    assert [d["content_block"] for k, d in events if k == "content_block_start"] == [
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {}},
        {"type": "tool_use", "id": "toolu_01B", "name": "get_weather", "input": {}},
    ]
    assert events[-2][1]["usage"] == {"input_tokens": 472, "output_tokens": 89}


# ---------------------------------------------------------------- SSE parser


def test_sse_parser_framing() -> None:
    parser = SSEParser()
    data = b": comment\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\nevent: b\ndata: {}\n\nid: 3\n\ndata: tail"
    events = [e for i in range(len(data)) for e in parser.feed(data[i : i + 1])]
    assert events == [("a", b"one\ntwo"), ("b", b"{}")]
    assert parser.flush() == [(None, b"tail")]
    assert parser.flush() == []
