"""OpenAI chat completions ⇄ Gemini generateContent: requests, responses and byte-split streams."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

import orjson
import pytest

from unigate.errors import InvalidRequest
from unigate.translate.gemini import (
    GeminiToOpenAIStream,
    OpenAIToGeminiStream,
    gemini_schema,
    gemini_to_openai_request,
    gemini_to_openai_response,
    openai_to_gemini_request,
    openai_to_gemini_response,
)
from unigate.translate.translation import Dropped

Json = dict[str, Any]
MODEL = "gemini-2.5-flash"
PNG = "iVBORw0KGgoAAAANSUhEUg=="
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "strict": True,
        "parameters": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name."},
                "unit": {"type": ["string", "null"], "enum": ["C", "F"]},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
}


def rich_conversation() -> Json:
    return {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in these pictures? And the weather?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
                    },
                    {
                        "type": "image_url",
                        "image_url": {"url": "https://example.com/img/cat.webp?size=large"},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": "ca",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {"id": "cb", "type": "function", "function": {"name": "get_time", "arguments": ""}},
                ],
            },
            {"role": "tool", "tool_call_id": "cb", "content": "12:00"},
            {"role": "tool", "tool_call_id": "ca", "content": '{"temp": 21}'},
            {"role": "assistant", "content": "A cat; sunny, 21°C."},
            {"role": "user", "content": "Thanks!"},
        ],
        "tools": [WEATHER_TOOL, TIME_TOOL],
        "tool_choice": "auto",
        "stop": "END",
        "max_tokens": 256,
        "temperature": 0.2,
        "top_p": 0.9,
        "n": 2,
        "stream": True,
    }


GEMINI_CONVERSATION: Json = {
    "contents": [
        {
            "role": "user",
            "parts": [
                {"text": "What is in these pictures? And the weather?"},
                {"inlineData": {"mimeType": "image/png", "data": PNG}},
                {
                    "fileData": {
                        "mimeType": "image/webp",
                        "fileUri": "https://example.com/img/cat.webp?size=large",
                    }
                },
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Let me check."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_time", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_time", "response": {"output": "12:00"}}},
                {"functionResponse": {"name": "get_weather", "response": {"temp": 21}}},
            ],
        },
        {"role": "model", "parts": [{"text": "A cat; sunny, 21°C."}]},
        {"role": "user", "parts": [{"text": "Thanks!"}]},
    ],
    "systemInstruction": {"parts": [{"text": "Be brief."}]},
    "tools": [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "city": {"type": "string", "description": "City name."},
                            "unit": {"type": "string", "nullable": True, "enum": ["C", "F"]},
                        },
                        "required": ["city"],
                    },
                },
                {"name": "get_time"},
            ]
        }
    ],
    "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    "generationConfig": {
        "temperature": 0.2,
        "topP": 0.9,
        "candidateCount": 2,
        "maxOutputTokens": 256,
        "stopSequences": ["END"],
    },
}


# --- requests ---------------------------------------------------------------------------------


def test_openai_request_to_gemini() -> None:
    assert openai_to_gemini_request(rich_conversation()) == GEMINI_CONVERSATION


def test_gemini_request_to_openai_synthesizes_ids_and_pairs_results_by_name() -> None:
    body = gemini_to_openai_request(GEMINI_CONVERSATION, MODEL)
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[1]["content"] == [
        {"type": "text", "text": "What is in these pictures? And the weather?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/img/cat.webp?size=large"}},
    ]
    assert messages[2] == {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            },
            {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
        ],
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "12:00"}
    assert messages[4] == {"role": "tool", "tool_call_id": "call_0", "content": '{"temp":21}'}
    assert messages[5:] == [
        {"role": "assistant", "content": "A cat; sunny, 21°C."},
        {"role": "user", "content": "Thanks!"},
    ]
    assert body["model"] == MODEL
    assert body["tool_choice"] == "auto"
    assert body["stop"] == ["END"]
    assert body["max_completion_tokens"] == 256
    assert (body["temperature"], body["top_p"], body["n"]) == (0.2, 0.9, 2)
    weather = body["tools"][0]["function"]
    assert weather["parameters"]["properties"]["unit"] == {"type": ["string", "null"], "enum": ["C", "F"]}
    assert body["tools"][1] == {"type": "function", "function": {"name": "get_time"}}


def test_request_round_trip_is_stable() -> None:
    back = gemini_to_openai_request(GEMINI_CONVERSATION, MODEL)
    assert openai_to_gemini_request(back) == GEMINI_CONVERSATION


def test_snake_case_gemini_request_is_accepted() -> None:
    payload = {
        "contents": [
            {"role": "user", "parts": [{"inline_data": {"mime_type": "audio/wav", "data": "UklG"}}]}
        ],
        "system_instruction": {"parts": [{"text": "sys"}]},
        "generation_config": {"max_output_tokens": 9, "stop_sequences": ["x"]},
    }
    body = gemini_to_openai_request(payload, MODEL)
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [{"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}],
        },
    ]
    assert (body["max_completion_tokens"], body["stop"]) == (9, ["x"])


@pytest.mark.parametrize(
    ("choice", "config", "declared"),
    [
        ("auto", {"mode": "AUTO"}, ["get_weather", "get_time"]),
        ("none", {"mode": "NONE"}, ["get_weather", "get_time"]),
        ("required", {"mode": "ANY"}, ["get_weather", "get_time"]),
        (
            {"type": "function", "function": {"name": "get_time"}},
            {"mode": "ANY", "allowedFunctionNames": ["get_time"]},
            ["get_weather", "get_time"],
        ),
        (
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [
                        {"type": "function", "function": {"name": "get_time"}},
                        {"type": "function", "function": {"name": "get_weather"}},
                    ],
                },
            },
            {"mode": "ANY", "allowedFunctionNames": ["get_time", "get_weather"]},
            ["get_weather", "get_time"],
        ),
    ],
)
def test_tool_choice_round_trip(choice: Any, config: Json, declared: list[str]) -> None:
    payload = {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [WEATHER_TOOL, TIME_TOOL],
        "tool_choice": choice,
    }
    gemini = openai_to_gemini_request(payload)
    assert gemini["toolConfig"] == {"functionCallingConfig": config}
    assert [d["name"] for d in gemini["tools"][0]["functionDeclarations"]] == declared
    assert gemini_to_openai_request(gemini, MODEL)["tool_choice"] == choice


def test_allowed_tools_in_auto_mode_narrows_the_declarations() -> None:
    choice = {
        "type": "allowed_tools",
        "allowed_tools": {"mode": "auto", "tools": [{"function": {"name": "get_time"}}]},
    }
    payload = {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [WEATHER_TOOL, TIME_TOOL],
        "tool_choice": choice,
    }
    gemini = openai_to_gemini_request(payload)
    assert gemini["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    assert gemini["tools"] == [{"functionDeclarations": [{"name": "get_time"}]}]


def test_gemini_ids_are_kept_and_results_answer_the_oldest_open_call() -> None:
    payload = {
        "contents": [
            {"role": "user", "parts": [{"text": "twice"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "f", "args": {"n": 1}}},
                    {"functionCall": {"name": "f", "args": {"n": 2}}},
                    {"functionCall": {"id": "own", "name": "g", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "f", "response": {"output": "one"}}},
                    {"functionResponse": {"id": "own", "name": "g", "response": {"ok": True}}},
                    {"functionResponse": {"name": "f", "response": {"output": "two"}}},
                    {"text": "and now?"},
                ],
            },
        ]
    }
    messages = gemini_to_openai_request(payload, MODEL)["messages"]
    assert [call["id"] for call in messages[1]["tool_calls"]] == ["call_0", "call_1", "own"]
    assert messages[2:] == [
        {"role": "tool", "tool_call_id": "call_0", "content": "one"},
        {"role": "tool", "tool_call_id": "own", "content": '{"ok":true}'},
        {"role": "tool", "tool_call_id": "call_1", "content": "two"},
        {"role": "user", "content": "and now?"},
    ]


def test_reused_call_ids_map_to_the_latest_assistant_turn() -> None:
    def turn(name: str) -> list[Json]:
        call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": "{}"}}
        return [
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0", "content": "x"},
        ]

    payload = {"messages": [{"role": "user", "content": "go"}, *turn("first"), *turn("second")]}
    contents = openai_to_gemini_request(payload)["contents"]
    assert contents[2]["parts"][0]["functionResponse"]["name"] == "first"
    assert contents[4]["parts"][0]["functionResponse"]["name"] == "second"


def test_response_format_and_sampling() -> None:
    schema = {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "site": {"type": "string", "format": "uri"},
        },
        "additionalProperties": False,
    }
    payload = {
        "messages": [{"role": "developer", "content": [{"type": "text", "text": "JSON only"}]}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "x", "schema": schema, "strict": True},
        },
        "max_completion_tokens": 10,
        "max_tokens": 99,
        "seed": 7,
    }
    gemini = openai_to_gemini_request(payload)
    assert gemini["systemInstruction"] == {"parts": [{"text": "JSON only"}]}
    assert gemini["contents"] == []
    assert gemini["generationConfig"] == {
        "seed": 7,
        "maxOutputTokens": 10,
        "responseMimeType": "application/json",
        "responseSchema": {
            "type": "object",
            "properties": {"when": {"type": "string", "format": "date-time"}, "site": {"type": "string"}},
        },
    }
    json_object = openai_to_gemini_request({**payload, "response_format": {"type": "json_object"}})
    assert json_object["generationConfig"]["responseMimeType"] == "application/json"
    assert "responseSchema" not in json_object["generationConfig"]
    back = gemini_to_openai_request({**gemini, "contents": [{"parts": [{"text": "x"}]}]}, MODEL)
    assert back["response_format"]["json_schema"]["schema"]["properties"]["when"] == {
        "type": "string",
        "format": "date-time",
    }


def test_json_schemas_with_geminis_type_names_get_json_schemas_own() -> None:
    # Gemini CLI's JSON side calls (its model router's classifier) send the SDK's `Type.OBJECT`
    # in `responseJsonSchema`, which Google takes and OpenAI refuses.
    classifier = {
        "type": "OBJECT",
        "properties": {
            "complexity_reasoning": {"type": "STRING", "description": "Why."},
            "complexity_score": {"type": "INTEGER"},
            "type": {"type": ["STRING", "NULL"]},  # a property named `type` keeps its name
            "steps": {"type": "ARRAY", "items": {"type": "OBJECT", "properties": {"n": {"type": "NUMBER"}}}},
            "either": {"anyOf": [{"type": "BOOLEAN"}, {"$ref": "#/$defs/flag"}]},
        },
        "$defs": {"flag": {"type": "BOOLEAN"}},
        "required": ["complexity_reasoning", "complexity_score"],
    }
    body = {
        "contents": [{"parts": [{"text": "Route this"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": classifier},
        "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": classifier}]}],
    }
    chat = gemini_to_openai_request(body, MODEL)
    want = {
        "type": "object",
        "properties": {
            "complexity_reasoning": {"type": "string", "description": "Why."},
            "complexity_score": {"type": "integer"},
            "type": {"type": ["string", "null"]},
            "steps": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}},
            "either": {"anyOf": [{"type": "boolean"}, {"$ref": "#/$defs/flag"}]},
        },
        "$defs": {"flag": {"type": "boolean"}},
        "required": ["complexity_reasoning", "complexity_score"],
    }
    assert chat["response_format"]["json_schema"]["schema"] == want
    assert chat["tools"][0]["function"]["parameters"] == want
    assert classifier["type"] == "OBJECT"  # the client's body is not changed under it
    # A schema in JSON Schema's own spelling, as agents' tools mostly are, is passed as it is.
    tool = {"type": "object", "properties": {"file_path": {"type": "string"}}}
    plain = {**body, "tools": [{"functionDeclarations": [{"name": "read", "parametersJsonSchema": tool}]}]}
    assert gemini_to_openai_request(plain, MODEL)["tools"][0]["function"]["parameters"] is tool


def test_what_the_chat_form_cannot_carry_is_named_in_either_spelling() -> None:
    dropped = Dropped()
    body = {
        "contents": [{"parts": [{"text": "Hi"}]}],
        "safety_settings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "cached_content": "cachedContents/abc",
        "generation_config": {"top_k": 3, "presence_penalty": 0.1, "max_output_tokens": 9, "seed": None},
    }
    chat = gemini_to_openai_request(body, MODEL, dropped)
    assert chat["presence_penalty"] == 0.1 and chat["max_completion_tokens"] == 9
    assert dropped.dropped_for("openai") == ["cachedContent", "generationConfig.topK", "safetySettings"]
    # Anthropic has no presence penalty; every protocol has an output limit.
    assert "generationConfig.presencePenalty" in dropped.dropped_for("anthropic")
    assert not any("maxOutputTokens" in name for name in dropped.dropped_for("anthropic"))


def test_schema_refs_are_inlined_and_unsupported_keys_dropped() -> None:
    schema = {
        "$defs": {
            "Pet": {
                "type": "object",
                "properties": {"kind": {"const": "cat"}, "friend": {"$ref": "#/$defs/Pet"}},
            }
        },
        "type": "object",
        "properties": {
            "pet": {"allOf": [{"$ref": "#/$defs/Pet"}], "description": "The pet."},
            "age": {"oneOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}]},
            "level": {"type": "integer", "enum": [1, 2]},
        },
    }
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "pet": {
                "type": "object",
                "properties": {"kind": {"enum": ["cat"]}, "friend": {"type": "object"}},
                "description": "The pet.",
            },
            "age": {"type": "integer", "nullable": True},
            "level": {"type": "integer"},
        },
    }


def test_media_parts() -> None:
    content = [
        {"type": "image_url", "image_url": {"url": "data:image/svg+xml,%3Csvg%2F%3E"}},
        {"type": "image_url", "image_url": {"url": "https://x.test/photo"}},
        {"type": "image_url", "image_url": {"url": "gs://bucket/a.PNG"}},
        {"type": "input_audio", "input_audio": {"data": "AAA=", "format": "mp3"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"}},
    ]
    parts = openai_to_gemini_request({"messages": [{"role": "user", "content": content}]})["contents"][0][
        "parts"
    ]
    assert parts == [
        {"inlineData": {"mimeType": "image/svg+xml", "data": "PHN2Zy8+"}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://x.test/photo"}},
        {"fileData": {"mimeType": "image/png", "fileUri": "gs://bucket/a.PNG"}},
        {"inlineData": {"mimeType": "audio/mp3", "data": "AAA="}},
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBE"}},
    ]
    back = gemini_to_openai_request({"contents": [{"role": "user", "parts": parts}]}, MODEL)["messages"][0]
    assert back["content"][3:] == [
        {"type": "input_audio", "input_audio": {"data": "AAA=", "format": "mp3"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE"}},
    ]


@pytest.mark.parametrize(
    "payload",
    [
        {"messages": []},
        {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "web_search"}]},
        {
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}]}
            ]
        },
        {"messages": [{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}]},
        {"messages": [{"role": "tool", "tool_call_id": "nowhere", "content": "x"}]},
        {"messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes"},
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": '{"a": '}}],
                }
            ]
        },
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "[1]"}}],
                }
            ]
        },
    ],
)
def test_untranslatable_openai_requests_are_invalid(payload: Json) -> None:
    with pytest.raises(InvalidRequest):
        openai_to_gemini_request(payload)


@pytest.mark.parametrize(
    "payload",
    [
        {"contents": []},
        {"contents": [{"parts": [{"text": "x"}]}], "tools": [{"functionDeclarations": {}}]},
        {"contents": [{"parts": [{"functionResponse": {"name": "f", "response": {}}}]}]},
        {"contents": [{"parts": [{"executableCode": {"code": "1"}}]}]},
        {"contents": [{"role": "system", "parts": [{"text": "x"}]}]},
    ],
)
def test_untranslatable_gemini_requests_are_invalid(payload: Json) -> None:
    with pytest.raises(InvalidRequest):
        gemini_to_openai_request(payload, MODEL)


# --- responses --------------------------------------------------------------------------------

GEMINI_RESPONSE: Json = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "thinking...", "thought": True},
                    {"text": "Checking "},
                    {"text": "both."},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                    {"functionCall": {"name": "get_time", "args": {}}},
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        },
        {"content": {"role": "model", "parts": [{"text": "Cut"}]}, "finishReason": "MAX_TOKENS", "index": 1},
    ],
    "usageMetadata": {
        "promptTokenCount": 10,
        "candidatesTokenCount": 7,
        "thoughtsTokenCount": 3,
        "totalTokenCount": 20,
        "cachedContentTokenCount": 4,
    },
    "modelVersion": "gemini-2.5-flash-001",
    "responseId": "r1",
}


def test_gemini_response_to_openai() -> None:
    body = gemini_to_openai_response(GEMINI_RESPONSE, MODEL, created=5)
    assert body == {
        "id": "chatcmpl-r1",
        "object": "chat.completion",
        "created": 5,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Checking both.",
                    "refusal": None,
                    "tool_calls": [
                        {
                            "id": "call_r1_0",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        },
                        {
                            "id": "call_r1_1",
                            "type": "function",
                            "function": {"name": "get_time", "arguments": "{}"},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
                "logprobs": None,
            },
            {
                "index": 1,
                "message": {"role": "assistant", "content": "Cut", "refusal": None},
                "finish_reason": "length",
                "logprobs": None,
            },
        ],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": 10,
            "total_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 4},
            "completion_tokens_details": {"reasoning_tokens": 3},
        },
    }


def test_openai_response_to_gemini_and_back() -> None:
    openai = gemini_to_openai_response(GEMINI_RESPONSE, MODEL, created=5)
    gemini = openai_to_gemini_response(openai, MODEL)
    assert gemini == {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Checking both."},
                        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                        {"functionCall": {"name": "get_time", "args": {}}},
                    ],
                },
                "finishReason": "STOP",
                "index": 0,
            },
            {
                "content": {"role": "model", "parts": [{"text": "Cut"}]},
                "finishReason": "MAX_TOKENS",
                "index": 1,
            },
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 7,
            "totalTokenCount": 20,
            "thoughtsTokenCount": 3,
            "cachedContentTokenCount": 4,
        },
        "modelVersion": MODEL,
        "responseId": "r1",
    }
    assert gemini_to_openai_response(gemini, MODEL, created=5) == openai


@pytest.mark.parametrize(
    ("gemini", "openai"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("OTHER", "stop"),
        ("MALFORMED_FUNCTION_CALL", "stop"),
    ],
)
def test_finish_reasons(gemini: str, openai: str) -> None:
    body = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": gemini}]}
    assert gemini_to_openai_response(body, MODEL)["choices"][0]["finish_reason"] == openai
    back = {"choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": openai}]}
    expected = (
        "SAFETY" if openai == "content_filter" else gemini if gemini in ("STOP", "MAX_TOKENS") else "STOP"
    )
    assert openai_to_gemini_response(back, MODEL)["candidates"][0]["finishReason"] == expected


def test_blocked_prompt_and_malformed_arguments() -> None:
    blocked = gemini_to_openai_response({"promptFeedback": {"blockReason": "SAFETY"}}, MODEL)
    assert blocked["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "", "refusal": None},
            "finish_reason": "content_filter",
            "logprobs": None,
        }
    ]
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
    body = {"choices": [{"message": {"content": None, "tool_calls": [call]}, "finish_reason": "tool_calls"}]}
    candidate = openai_to_gemini_response(body, MODEL)["candidates"][0]
    assert candidate == {
        "content": {"role": "model", "parts": []},
        "finishReason": "MALFORMED_FUNCTION_CALL",
        "index": 0,
    }


# --- streams ----------------------------------------------------------------------------------


class _Stream(Protocol):
    broken: bool

    def feed(self, data: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


def _sse(events: list[Json], sep: bytes) -> bytes:
    # ensure_ascii=False keeps multi-byte UTF-8 on the wire, so splits can land inside a character.
    return b"".join(b"data: " + json.dumps(event, ensure_ascii=False).encode() + sep for event in events)


def _gemini_event(parts: list[Json], finish: str | None = None, completion: int = 1) -> Json:
    candidate: Json = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 5, "candidatesTokenCount": completion, "totalTokenCount": 5 + completion}
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": MODEL, "responseId": "resp9"}


GEMINI_TEXT_STREAM = _sse(
    [
        _gemini_event([{"text": "Hello"}]),
        _gemini_event([{"text": " héllo 世界 🎵"}], completion=6),
        {
            **_gemini_event([{"text": "!"}], "STOP", completion=9),
            "usageMetadata": {
                "promptTokenCount": 5,
                "candidatesTokenCount": 9,
                "thoughtsTokenCount": 6,
                "totalTokenCount": 20,
            },
        },
    ],
    b"\r\n\r\n",
)
GEMINI_CALL_STREAM = b": keep-alive\r\n\r\n" + _sse(
    [
        _gemini_event([{"text": "Checking…"}]),
        _gemini_event(
            [
                {"functionCall": {"name": "get_weather", "args": {"city": "Zürich"}}},
                {"functionCall": {"name": "get_time", "args": {"tz": "CET"}}},
            ],
            "STOP",
            completion=12,
        ),
    ],
    b"\r\n\r\n",
)


def _chunk(delta: Json, finish: str | None = None, **extra: Any) -> Json:
    return {
        "id": "chatcmpl-77",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-x",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def _fragment(index: int, arguments: str, name: str | None = None) -> Json:
    call: Json = {"index": index, "function": {"arguments": arguments}}
    if name:
        call = {
            **call,
            "id": f"call_{name}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
    return {"tool_calls": [call]}


OPENAI_STREAM = (
    _sse(
        [
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": "héllo "}),
            _chunk({"content": "世界 🎵"}),
            _chunk(_fragment(0, "", "get_weather")),
            _chunk(_fragment(0, '{"city": "Z')),
            _chunk(_fragment(1, '{"tz"', "get_time")),
            _chunk(_fragment(0, 'ürich"}')),
            _chunk(_fragment(1, ': "CET"}')),
            _chunk({}, "tool_calls"),
            {
                **_chunk({}),
                "choices": [],
                "usage": {"prompt_tokens": 4, "completion_tokens": 8, "total_tokens": 12},
            },
        ],
        b"\n\n",
    )
    + b"data: [DONE]\n\n"
)


def _run(make: Callable[[], _Stream], pieces: list[bytes]) -> tuple[bytes, bool]:
    stream = make()
    out = b"".join(stream.feed(piece) for piece in pieces) + stream.finish()
    return out, stream.broken


def _assert_split_invariant(make: Callable[[], _Stream], data: bytes) -> bytes:
    """Same output whether the upstream bytes arrive whole, in two pieces cut anywhere
    (mid-line, inside CRLF, inside a UTF-8 character), or one byte at a time."""
    whole = _run(make, [data])
    for cut in range(len(data) + 1):
        assert _run(make, [data[:cut], data[cut:]]) == whole, f"split at byte {cut}"
    assert _run(make, [data[i : i + 1] for i in range(len(data))]) == whole
    return whole[0]


def _payloads(out: bytes) -> list[bytes]:
    """The data payloads, framed the strict google-genai way: `data: ` with a space, blank line."""
    assert out.endswith(b"\n\n")
    events = out[:-2].split(b"\n\n")
    assert all(event.startswith(b"data: ") and b"\n" not in event for event in events)
    return [event[6:] for event in events]


def _gemini_to_openai() -> GeminiToOpenAIStream:
    return GeminiToOpenAIStream(MODEL, include_usage=True, created=1)


def test_gemini_text_stream_to_openai() -> None:
    out = _assert_split_invariant(_gemini_to_openai, GEMINI_TEXT_STREAM)
    payloads = _payloads(out)
    assert payloads[-1] == b"[DONE]"
    chunks = [orjson.loads(p) for p in payloads[:-1]]
    assert {c["id"] for c in chunks} == {"chatcmpl-resp9"}
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0]["role"] == "assistant"
    assert all("role" not in d for d in deltas[1:])
    assert "".join(d.get("content", "") for d in deltas) == "Hello héllo 世界 🎵!"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["prompt_tokens"] == 5
    assert chunks[-1]["usage"]["completion_tokens"] == 15
    assert chunks[-1]["usage"]["total_tokens"] == 20
    stream = _gemini_to_openai()
    stream.feed(GEMINI_TEXT_STREAM)
    stream.finish()
    assert (stream.prompt_tokens, stream.completion_tokens, stream.broken) == (5, 15, False)


def test_gemini_function_call_stream_to_openai() -> None:
    out = _assert_split_invariant(
        lambda: GeminiToOpenAIStream(MODEL, include_usage=False, created=1), GEMINI_CALL_STREAM
    )
    payloads = _payloads(out)
    assert payloads[-1] == b"[DONE]"
    chunks = [orjson.loads(p) for p in payloads[:-1]]
    assert all(c["choices"] for c in chunks)  # no usage chunk without include_usage
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": "Checking…"}
    assert chunks[1]["choices"][0]["delta"]["tool_calls"] == [
        {
            "index": 0,
            "id": "call_resp9_0",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Zürich"}'},
        },
        {
            "index": 1,
            "id": "call_resp9_1",
            "type": "function",
            "function": {"name": "get_time", "arguments": '{"tz":"CET"}'},
        },
    ]
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "tool_calls"}


def test_gemini_stream_cut_off_ends_with_an_in_band_error() -> None:
    cut = GEMINI_TEXT_STREAM[: GEMINI_TEXT_STREAM.rindex(b"data: ")]
    out = _assert_split_invariant(_gemini_to_openai, cut)
    payloads = _payloads(out)
    assert b"[DONE]" not in payloads
    assert orjson.loads(payloads[-1])["error"]["code"] == "stream_broken"
    assert _run(_gemini_to_openai, [cut])[1] is True


def test_gemini_stream_error_event_becomes_an_openai_error() -> None:
    error = {"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}}
    data = _sse(
        [_gemini_event([{"text": "Hi"}]), error, _gemini_event([{"text": "late"}], "STOP")], b"\r\n\r\n"
    )
    out, broken = _run(_gemini_to_openai, [data])
    payloads = _payloads(out)
    assert broken and b"[DONE]" not in payloads and b"late" not in out
    assert orjson.loads(payloads[-1]) == {
        "error": {
            "message": "Quota exceeded.",
            "type": "rate_limit_error",
            "param": None,
            "code": "RESOURCE_EXHAUSTED",
        }
    }


def test_gemini_blocked_prompt_stream() -> None:
    data = _sse([{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "responseId": "b"}], b"\r\n\r\n")
    out, broken = _run(_gemini_to_openai, [data])
    chunks = [orjson.loads(p) for p in _payloads(out)[:-1]]
    assert not broken
    assert chunks[0]["choices"][0]["finish_reason"] == "content_filter"


def test_openai_stream_to_gemini() -> None:
    out = _assert_split_invariant(lambda: OpenAIToGeminiStream(MODEL), OPENAI_STREAM)
    payloads = _payloads(out)
    assert all(p.startswith(b'{"candidates":') for p in payloads)  # no [DONE] for Gemini clients
    events = [orjson.loads(p) for p in payloads]
    assert {(e["modelVersion"], e["responseId"]) for e in events} == {(MODEL, "77")}
    texts = [part.get("text", "") for e in events for part in e["candidates"][0]["content"]["parts"]]
    assert "".join(texts) == "héllo 世界 🎵"
    last = events[-1]
    assert last["candidates"] == [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "get_weather", "args": {"city": "Zürich"}}},
                    {"functionCall": {"name": "get_time", "args": {"tz": "CET"}}},
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ]
    assert last["usageMetadata"] == {"promptTokenCount": 4, "candidatesTokenCount": 8, "totalTokenCount": 12}
    assert all("finishReason" not in e["candidates"][0] for e in events[:-1])


def test_openai_stream_round_trips_through_gemini() -> None:
    gemini = OpenAIToGeminiStream(MODEL)
    upstream = gemini.feed(OPENAI_STREAM) + gemini.finish()
    out = _assert_split_invariant(_gemini_to_openai, upstream)
    chunks = [orjson.loads(p) for p in _payloads(out)[:-1]]
    calls = [call for c in chunks if c["choices"] for call in c["choices"][0]["delta"].get("tool_calls", [])]
    assert [(c["function"]["name"], orjson.loads(c["function"]["arguments"])) for c in calls] == [
        ("get_weather", {"city": "Zürich"}),
        ("get_time", {"tz": "CET"}),
    ]
    assert (gemini.prompt_tokens, gemini.completion_tokens) == (4, 8)


def test_openai_stream_without_done_but_finished_still_ends_cleanly() -> None:
    data = OPENAI_STREAM.removesuffix(b"data: [DONE]\n\n")
    out, broken = _run(lambda: OpenAIToGeminiStream(MODEL), [data])
    assert not broken
    assert orjson.loads(_payloads(out)[-1])["candidates"][0]["finishReason"] == "STOP"


def test_openai_stream_cut_off_ends_with_a_gemini_error() -> None:
    cut = OPENAI_STREAM[: OPENAI_STREAM.index(b'"finish_reason": "tool_calls"')]
    cut = cut[: cut.rindex(b"data: ")]
    out = _assert_split_invariant(lambda: OpenAIToGeminiStream(MODEL), cut)
    last = _payloads(out)[-1]
    assert last.startswith(b'{"error":')
    assert orjson.loads(last) == {
        "error": {
            "code": 502,
            "message": "The upstream stream ended before completion.",
            "status": "UNAVAILABLE",
        }
    }
    assert _run(lambda: OpenAIToGeminiStream(MODEL), [cut])[1] is True


def test_openai_error_event_becomes_a_gemini_error() -> None:
    error = {"error": {"message": "Slow down.", "type": "rate_limit_error", "param": None, "code": None}}
    data = _sse([_chunk({"content": "Hi"}), error], b"\n\n")
    out, broken = _run(lambda: OpenAIToGeminiStream(MODEL), [data])
    assert broken
    assert orjson.loads(_payloads(out)[-1]) == {
        "error": {"code": 429, "message": "Slow down.", "status": "RESOURCE_EXHAUSTED"}
    }


def test_openai_stream_length_and_malformed_arguments() -> None:
    data = _sse([_chunk(_fragment(0, '{"a": ', "f")), _chunk({}, "length")], b"\n\n") + b"data: [DONE]\n\n"
    out, _ = _run(lambda: OpenAIToGeminiStream(MODEL), [data])
    last = orjson.loads(_payloads(out)[-1])["candidates"][0]
    assert last["finishReason"] == "MALFORMED_FUNCTION_CALL"
    assert last["content"]["parts"] == [{"text": ""}]


def test_tool_choice_without_tools_sends_no_tool_config() -> None:
    gemini = openai_to_gemini_request(
        {"messages": [{"role": "user", "content": "hi"}], "tool_choice": "none"}
    )
    assert gemini == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


@pytest.mark.parametrize("declaration", [{}, {"name": ""}, {"name": 5}, "f"])
def test_a_function_declaration_needs_a_name(declaration: Any) -> None:
    """Google's API and the document require `name`; it became a tool named None before."""
    body = {"contents": [{"parts": [{"text": "x"}]}], "tools": [{"functionDeclarations": [declaration]}]}
    with pytest.raises(InvalidRequest) as caught:
        gemini_to_openai_request(body, "m")
    assert caught.value.param in ("tools[0].functionDeclarations[0].name", "tools[0].functionDeclarations[0]")


@pytest.mark.parametrize(
    ("contents", "param"),
    [
        ([{"role": "user", "parts": [{"text": "hi"}]}, "not an object"], "contents[1]"),
        ([{"role": 7, "parts": [{"text": "hi"}]}], "contents[0].role"),
        ([{"role": "user", "parts": {"text": "hi"}}], "contents[0].parts"),
        (
            [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"text": "a"}, 3]}],
            "contents[1].parts[1]",
        ),
    ],
)
def test_a_malformed_content_names_its_place(contents: list[Any], param: str) -> None:
    """A place is spelled out only for a refusal (`checks.place`), and spelled right."""
    with pytest.raises(InvalidRequest) as refused:
        gemini_to_openai_request({"contents": contents}, "m")
    assert refused.value.param == param
