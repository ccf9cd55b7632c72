"""Responses API ⇄ canonical chat: requests, whole answers and byte-split streams."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from unigate.errors import InvalidRequest
from unigate.translate.responses_items import Untranslatable, for_upstream
from unigate.translate.responses_request import parse_request
from unigate.translate.responses_response import ResponseFrame, chat_to_response
from unigate.translate.responses_stream import ChatToResponsesStream
from unigate.translate.sse import SSEParser

TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def test_string_input_and_instructions() -> None:
    req = parse_request({"model": "m", "input": "Hi", "instructions": "Be brief.", "max_output_tokens": 50})
    chat = req.canonical([])
    assert chat["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert chat["max_completion_tokens"] == 50 and "stream" not in chat
    item = req.input_items[0]
    assert item["type"] == "message" and item["id"].startswith("msg_") and item["status"] == "completed"
    assert item["content"] == [{"type": "input_text", "text": "Hi"}]
    assert req.store and not req.stream and not req.background


def test_typed_items_tools_and_formats() -> None:
    payload = {
        "model": "m",
        "stream": True,
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Look"},
                    {"type": "input_image", "image_url": "https://x.test/a.png", "detail": "low"},
                ],
            },
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sure."}]},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"P"}',
            },
            {
                "type": "function_call",
                "call_id": "call_2",
                "name": "get_weather",
                "arguments": '{"city":"T"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {
                "type": "function_call_output",
                "call_id": "call_2",
                "output": [{"type": "input_text", "text": "rain"}],
            },
        ],
        "tools": [TOOL],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "parallel_tool_calls": False,
        "text": {
            "format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}, "strict": True}
        },
        "reasoning": {"effort": "low"},
        "temperature": 0.2,
    }
    req = parse_request(payload)
    chat = req.canonical([])
    user, assistant, tool1, tool2 = chat["messages"]
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "https://x.test/a.png", "detail": "low"},
    }
    assert assistant["content"] == "Sure." and [c["id"] for c in assistant["tool_calls"]] == [
        "call_1",
        "call_2",
    ]
    assert tool1 == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    assert tool2["content"] == "rain"
    assert chat["tools"][0]["function"]["name"] == "get_weather"
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert chat["parallel_tool_calls"] is False and chat["reasoning_effort"] == "low"
    assert chat["response_format"]["json_schema"] == {
        "name": "w",
        "schema": {"type": "object"},
        "strict": True,
    }
    assert chat["stream"] and chat["stream_options"] == {"include_usage": True}
    assert req.dropped_for("openai") == []
    assert req.dropped_for("sandbox") == ["reasoning", "temperature"]
    assert req.dropped_for("anthropic") == ["reasoning"]
    assert req.dropped_for("gemini") == ["parallel_tool_calls", "reasoning"]


def test_history_comes_first_and_native_input_drops_local_fields() -> None:
    history = [
        *parse_request({"model": "m", "input": "one"}).input_items,
        {"id": "msg_a", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "first", "annotations": []}]},
        {"id": "rs_1", "type": "reasoning", "summary": []},
        {"id": "ws_1", "type": "web_search_call", "status": "completed"},
    ]  # fmt: skip
    req = parse_request({"model": "m", "input": "two"})
    chat = req.canonical(history)
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "user"]
    assert req.dropped_for("openai") == ["history.web_search_call"]
    assert all("id" not in item and "status" not in item for item in for_upstream(history))


def test_native_only_fields_and_content_are_refused_by_name() -> None:
    assert parse_request({"model": "m", "input": "x", "conversation": "conv_1"}).blocked is not None
    part = {"type": "input_image", "file_id": "file_1"}
    with pytest.raises(Untranslatable, match="file_id"):
        parse_request({"model": "m", "input": [{"role": "user", "content": [part]}]}).canonical([])


def test_unhonoured_fields_are_listed() -> None:
    req = parse_request(
        {"model": "m", "input": "x", "include": ["reasoning.encrypted_content"], "truncation": "disabled",
         "top_logprobs": 2, "metadata": {"k": "v"}, "store": False}
    )  # fmt: skip
    assert req.dropped_for("openai") == ["include.reasoning.encrypted_content", "top_logprobs"]
    assert req.metadata == {"k": "v"} and not req.store


@pytest.mark.parametrize(
    ("payload", "param"),
    [
        ({"input": "x"}, "model"),
        ({"model": "m"}, "input"),
        ({"model": "m", "input": 3}, "input"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"model": "m", "input": "x", "stream": "yes"}, "stream"),
        ({"model": "m", "input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"model": "m", "input": "x", "text": {"format": {"type": "xml"}}}, "text.format.type"),
        ({"model": "m", "input": "x", "reasoning": {"effort": "huge"}}, "reasoning.effort"),
        ({"model": "m", "input": "x", "reasoning": {"effort": {}}}, "reasoning.effort"),  # once a 500
        ({"model": "m", "input": "x", "text": {"format": {"schema": 1}}}, "text.format.schema"),
        ({"model": "m", "input": "x", "text": {"format": {"type": "text", "name": 2}}}, "text.format.name"),
        ({"model": "m", "input": "x", "reasoning": {"effort": ["low"]}}, "reasoning.effort"),
        (
            {"model": "m", "input": "x", "tool_choice": {"type": "allowed_tools", "mode": {}, "tools": []}},
            "tool_choice.mode",
        ),
        ({"model": "m", "input": "x", "metadata": {"k": 1}}, "metadata.k"),
        ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
    ],
)
def test_bad_requests_name_the_field(payload: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_request(payload).canonical([])
    assert info.value.param == param and not isinstance(info.value, Untranslatable)


def _frame(**payload: Any) -> ResponseFrame:
    return ResponseFrame.for_request(parse_request({"model": "m", "input": "x", **payload}))


def test_chat_answer_as_response() -> None:
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "Hello",
                    "tool_calls": [
                        {"id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 2}},
    }
    out = chat_to_response(body, _frame(instructions="hi", metadata={"a": "b"}))
    assert out["object"] == "response" and out["id"].startswith("resp_") and out["status"] == "completed"
    message, call = out["output"]
    assert message["content"][0] == {
        "type": "output_text",
        "text": "Hello",
        "annotations": [],
        "logprobs": [],
    }
    assert call["type"] == "function_call" and call["call_id"] == "call_9" and call["name"] == "f"
    assert out["usage"]["input_tokens"] == 5 and out["usage"]["total_tokens"] == 8
    assert out["usage"]["input_tokens_details"]["cached_tokens"] == 2
    assert out["instructions"] == "hi" and out["metadata"] == {"a": "b"}
    cut = chat_to_response(
        {"choices": [{"message": {"content": "Hel"}, "finish_reason": "length"}]}, _frame()
    )
    assert cut["status"] == "incomplete" and cut["incomplete_details"] == {"reason": "max_output_tokens"}


def _chunks(*deltas: dict[str, Any], finish: str = "stop", usage: bool = True) -> bytes:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = b""
    for delta in [{"role": "assistant", "content": ""}, *deltas]:
        out += b"data: " + orjson.dumps({**head, "choices": [{"index": 0, "delta": delta}]}) + b"\n\n"
    out += b"data: " + orjson.dumps({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    out += b"\n\n"
    if usage:
        counts = {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}
        out += b"data: " + orjson.dumps({**head, "choices": [], "usage": counts}) + b"\n\n"
    return out + b"data: [DONE]\n\n"


def _events(data: bytes) -> list[dict[str, Any]]:
    parser = SSEParser()
    events = parser.feed(data) + parser.flush()
    out = [orjson.loads(body) for _, body in events]
    assert all(name == obj["type"] for (name, _), obj in zip(events, out, strict=True))
    return out


def _run(data: bytes) -> tuple[ChatToResponsesStream, list[dict[str, Any]]]:
    translator = ChatToResponsesStream(_frame())
    out = b"".join(translator.feed(data[i : i + 1]) for i in range(len(data)))  # byte by byte
    out += translator.finish()
    return translator, _events(out)


def test_text_stream() -> None:
    translator, events = _run(_chunks({"content": "Hel"}, {"content": "lo"}))
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[6]["text"] == "Hello" and events[8]["item"]["status"] == "completed"
    assert not translator.broken
    final = translator.final()
    assert final["status"] == "completed" and final["usage"]["output_tokens"] == 2
    terminal = _events(translator.terminal(final))[0]
    assert terminal["type"] == "response.completed" and terminal["sequence_number"] == len(events)
    assert terminal["response"]["output"][0]["content"][0]["text"] == "Hello"


def test_tool_call_stream_closes_the_text_first() -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
    more = {"index": 0, "function": {"arguments": '{"a":'}}
    rest = {"index": 0, "function": {"arguments": "1}"}}
    translator, events = _run(
        _chunks({"content": "Let me"}, {"tool_calls": [call]}, {"tool_calls": [more]}, {"tool_calls": [rest]},
                finish="tool_calls")
    )  # fmt: skip
    kinds = [e["type"] for e in events]
    assert kinds.index("response.output_item.done") < kinds.index("response.function_call_arguments.delta")
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert done["arguments"] == '{"a":1}' and done["name"] == "f" and done["output_index"] == 1
    final = translator.final()
    assert [o["type"] for o in final["output"]] == ["message", "function_call"]
    assert final["output"][1]["call_id"] == "call_1"


def test_length_stop_is_incomplete() -> None:
    translator, _ = _run(_chunks({"content": "Hel"}, finish="length"))
    final = translator.final()
    assert final["status"] == "incomplete" and final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert _events(translator.terminal(final))[0]["type"] == "response.incomplete"


def test_cut_off_stream_fails_with_an_error_the_sdk_raises_on() -> None:
    data = _chunks({"content": "Hel"})
    translator, _ = _run(data[: data.index(b"[DONE]") - 200])
    assert translator.broken
    response, event = translator.failed()
    assert response["status"] == "failed" and response["error"]["code"] == "server_error"
    failed, error = _events(event + translator.error_event("gone"))
    assert failed["type"] == "response.failed" and error["type"] == "error"
    assert error["error"]["message"] == "gone" and error["sequence_number"] == failed["sequence_number"] + 1


@pytest.mark.parametrize(
    ("items", "param"),
    [
        ([{"role": "user", "content": [{"type": "input_text", "text": 3}]}], "input[0].content[0].text"),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "output_text", "text": 1}]},
            ],
            "input[1].content[0].text",
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": [{"type": "input_image"}]}],
            "input[1].content[0].type",
        ),
        (
            [{"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_image"}]}],
            "input[0].content[1]",
        ),
        (
            [
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "c",
                    "output": [{"type": "input_text", "text": "a"}, 7],
                },
            ],
            "input[1].output[1]",
        ),
    ],
)
def test_a_part_without_a_chat_form_names_its_place(items: list[Any], param: str) -> None:
    """Places are spelled out only for a refusal (`checks.place`), and spelled right."""
    with pytest.raises(InvalidRequest) as refused:
        parse_request({"model": "m", "input": items, "store": False}).canonical([])
    assert refused.value.param == param
