"""Anthropic Messages -> canonical chat translation as real clients use it (system-role messages,
every content block with a meaning elsewhere, beta fields), what it names as dropped per
upstream protocol; and the same-format relay's helpers (model splice, relayed query)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from unigate.config import ProviderConfig
from unigate.errors import InvalidRequest
from unigate.limits.estimate import prompt_tokens
from unigate.providers.anthropic.messages import AnthropicProvider
from unigate.providers.base import ProviderContext
from unigate.providers.same_format import ClientRequest, relayed_query, request_body
from unigate.translate.anthropic import OpenAIToAnthropicStream, translate_messages
from unigate.translate.sse import SSEParser
from unigate.usage.recorder import Usage

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PDF_B64 = "JVBERi0xLjQKJcfsj6IK"


def _request(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 100, **fields}


def test_system_role_messages_stay_in_place() -> None:
    # Claude Code puts its environment block and tool lists in `system`-role messages.
    out = translate_messages(
        _request(
            system=[{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
            messages=[
                {"role": "system", "content": "Environment: linux"},
                {"role": "user", "content": "hi"},
                {"role": "system", "content": [{"type": "text", "text": "Deferred tools: Bash"}]},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "list files"},
            ],
        )
    )
    assert out.canonical["messages"] == [
        {"role": "system", "content": "You are Claude Code."},
        {"role": "system", "content": "Environment: linux"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "Deferred tools: Bash"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "list files"},
    ]
    assert out.dropped_for("openai") == []


def test_mid_conversation_system_block_splits_the_turn() -> None:
    out = translate_messages(
        _request(
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "before"},
                        {"type": "mid_conv_system", "content": [{"type": "text", "text": "Now be terse."}]},
                        {"type": "text", "text": "after"},
                    ],
                }
            ]
        )
    )
    assert out.canonical["messages"] == [
        {"role": "user", "content": "before"},
        {"role": "system", "content": "Now be terse."},
        {"role": "user", "content": "after"},
    ]


def test_thinking_blocks_are_left_out_silently() -> None:
    out = translate_messages(
        _request(
            messages=[
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "let me see", "signature": "c2ln"},
                        {"type": "redacted_thinking", "data": "b3BhcXVl"},
                        {"type": "text", "text": "answer"},
                    ],
                },
                {"role": "user", "content": "more"},
            ],
        )
    )
    assert out.canonical["messages"][1] == {"role": "assistant", "content": "answer"}
    assert out.dropped_for("openai") == []


def test_documents_images_and_search_results() -> None:
    out = translate_messages(
        _request(
            messages=[
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "document",
                            "title": "spec.pdf",
                            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64},
                            "cache_control": {"type": "ephemeral"},
                        },
                        {
                            "type": "document",
                            "title": "Notes",
                            "source": {"type": "text", "media_type": "text/plain", "data": "plain notes"},
                        },
                        {
                            "type": "document",
                            "source": {
                                "type": "content",
                                "content": [
                                    {"type": "text", "text": "chunk one"},
                                    {
                                        "type": "image",
                                        "source": {
                                            "type": "base64",
                                            "media_type": "image/png",
                                            "data": PNG_B64,
                                        },
                                    },
                                ],
                            },
                        },
                        {"type": "document", "source": {"type": "url", "url": "https://x.test/a.pdf"}},
                        {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
                        {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
                        {
                            "type": "search_result",
                            "title": "Result",
                            "source": "https://x.test/r",
                            "content": [{"type": "text", "text": "found it"}],
                        },
                        {"type": "text", "text": "Summarise."},
                    ],
                }
            ]
        )
    )
    assert out.canonical["messages"][0]["content"] == [
        {
            "type": "file",
            "file": {"file_data": f"data:application/pdf;base64,{PDF_B64}", "filename": "spec.pdf"},
        },
        {"type": "text", "text": "Notes\n\nplain notes"},
        {"type": "text", "text": "chunk one"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
        {"type": "text", "text": "Result\nhttps://x.test/r\n\nfound it"},
        {"type": "text", "text": "Summarise."},
    ]
    assert out.dropped_for("openai") == [
        "messages.content.document.source.url",
        "messages.content.image.source.file",
    ]


def test_tool_results_with_text_and_images() -> None:
    out = translate_messages(
        _request(
            messages=[
                {"role": "user", "content": "look"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.png"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"cmd": "ls"}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": [
                                {"type": "text", "text": "the image:"},
                                {
                                    "type": "image",
                                    "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
                                },
                            ],
                        },
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "a b", "is_error": True},
                        {"type": "text", "text": "<system-reminder>x</system-reminder>", "cache_control": {}},
                    ],
                },
            ],
        )
    )
    messages = out.canonical["messages"]
    assert messages[1]["tool_calls"][0]["function"] == {"name": "Read", "arguments": '{"path":"a.png"}'}
    assert messages[2:] == [
        {"role": "tool", "tool_call_id": "toolu_1", "content": "the image:"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: a b"},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
                {"type": "text", "text": "<system-reminder>x</system-reminder>"},
            ],
        },
    ]


def test_fields_and_blocks_without_a_place_are_named_per_protocol() -> None:
    out = translate_messages(
        _request(
            messages=[
                {"role": "user", "content": "search"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                        {"type": "server_tool_use", "id": "srvtu_2", "name": "code_execution", "input": {}},
                        {"type": "code_execution_tool_result", "tool_use_id": "srvtu_2", "content": {}},
                        {"type": "text", "text": "found"},
                    ],
                },
                {"role": "user", "content": "thanks"},
            ],
            tools=[
                {"name": "Bash", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}},
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
                {"type": "code_execution_20250522", "name": "code_execution"},
            ],
            tool_choice={"type": "auto", "disable_parallel_tool_use": True},
            thinking={"type": "enabled", "budget_tokens": 2000},
            context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
            metadata={"user_id": "user_abc"},
            temperature=0.5,
            top_k=5,
            service_tier="auto",
            cache_control={"type": "ephemeral"},
            mcp_servers=[{"type": "url", "url": "https://mcp.test", "name": "m"}],
        )
    )
    canonical = out.canonical
    assert [t["function"]["name"] for t in canonical["tools"]] == ["Bash"]
    assert canonical["tool_choice"] == "auto" and canonical["parallel_tool_calls"] is False
    assert canonical["user"] == "user_abc" and canonical["temperature"] == 0.5
    # Web search is the canonical hosted search; an earlier search's blocks are left out
    # without a word (the text after them carries what was found), other server tools named.
    assert canonical["web_search_options"] == {}
    assert [(t.name, t.param) for t in out.hosted] == [("code_execution_20250522", "tools[2]")]
    common = [
        "context_management",
        "mcp_servers",
        "messages.content.code_execution_tool_result",
        "messages.content.server_tool_use",
        "thinking",
        "tools.code_execution_20250522",
        "tools.web_search_20250305.max_uses",
        "top_k",
    ]
    assert out.dropped_for("openai") == common
    assert out.dropped_for("gemini") == sorted(
        [*common, "metadata.user_id", "tool_choice.disable_parallel_tool_use"]
    )
    assert out.dropped_for("sandbox") == sorted([*common, "metadata.user_id", "temperature"])


@pytest.mark.parametrize(
    ("choice", "expected", "dropped"),
    [
        ({"type": "any"}, "required", []),
        ({"type": "none"}, "none", []),
        ({"type": "tool", "name": "Bash"}, {"type": "function", "function": {"name": "Bash"}}, []),
        ({"type": "tool", "name": "web_search"}, None, ["tool_choice"]),
    ],
)
def test_tool_choice_forms(choice: dict[str, Any], expected: Any, dropped: list[str]) -> None:
    tools = [
        {"name": "Bash", "input_schema": {"type": "object"}},
        {"type": "web_search_20250305", "name": "web_search"},
    ]
    out = translate_messages(
        _request(messages=[{"role": "user", "content": "x"}], tools=tools, tool_choice=choice)
    )
    assert out.canonical.get("tool_choice") == expected
    assert out.canonical["web_search_options"] == {}
    assert out.dropped_for("openai") == dropped


def test_structured_output_becomes_a_json_schema_response_format() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    for fields in ({"output_config": {"format": {"type": "json_schema", "schema": schema}}},
                   {"output_format": {"type": "json_schema", "schema": schema}}):  # fmt: skip
        out = translate_messages(_request(messages=[{"role": "user", "content": "x"}], **fields))
        assert out.canonical["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema},
        }
    with pytest.raises(InvalidRequest):
        translate_messages(
            _request(
                messages=[{"role": "user", "content": "x"}], output_config={"format": {"type": "grammar"}}
            )
        )


@pytest.mark.parametrize(
    "message",
    [
        {"role": "tool", "content": "x"},
        {"role": "user", "content": [{"text": "no type"}]},
        {"role": "user", "content": [{"type": "text", "text": 5}]},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]},
    ],
)
def test_malformed_requests_are_refused(message: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest):
        translate_messages(_request(messages=[message]))


def test_message_start_carries_the_upstream_input_count() -> None:
    usage = Usage(prompt_tokens=42)  # reported with the upstream's first event (Gemini, the sandbox)
    stream = OpenAIToAnthropicStream("m", usage)
    chunk = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]}
    out = stream.feed(b"data: " + orjson.dumps(chunk) + b"\n\n")
    first = SSEParser().feed(out)[0]
    assert first[0] == "message_start"
    assert orjson.loads(first[1])["message"]["usage"] == {"input_tokens": 42, "output_tokens": 0}
    # A first chunk that carries usage itself wins; without either, 0 until `message_delta`.
    own = OpenAIToAnthropicStream("m", Usage())
    with_usage = {**chunk, "usage": {"prompt_tokens": 9, "completion_tokens": 0}}
    event = SSEParser().feed(own.feed(b"data: " + orjson.dumps(with_usage) + b"\n\n"))[0]
    assert orjson.loads(event[1])["message"]["usage"]["input_tokens"] == 9
    bare = SSEParser().feed(OpenAIToAnthropicStream("m").feed(b"data: " + orjson.dumps(chunk) + b"\n\n"))[0]
    assert orjson.loads(bare[1])["message"]["usage"]["input_tokens"] == 0


# -- the same-format relay's helpers --


def test_model_splice_keeps_every_other_byte() -> None:
    # A nested `model` key (Claude Code's Task tool has one in its schema) and `\u` escapes in
    # text: the scan still finds the top-level value, and nothing else changes.
    raw = (
        b'{"max_tokens": 10,\n "messages": [{"role": "user", "content": "caf\\u00e9 \\"model\\": x"}],'
        b' "tools": [{"name": "Task", "input_schema": {"properties": {"model": {"type": "string"}}}}],'
        b'  "model" :  "gw-model", "stream": false}'
    )
    body = request_body(orjson.loads(raw), "up-1", raw)
    assert body == raw.replace(b'"gw-model"', b'"up-1"')
    escaped = b'{"mod\\u0065l": "gw-model", "x": {"model": "keep"}}'
    assert request_body(orjson.loads(escaped), "up-1", escaped) == escaped.replace(b'"gw-model"', b'"up-1"')
    # A key that ends in `\"model` (the match starts inside the string) is not the model.
    quoted = b'{"say \\"model": "x", "model": "gw-model"}'
    assert request_body(orjson.loads(quoted), "up-1", quoted) == quoted.replace(b'"gw-model"', b'"up-1"')
    # Twice at the top level, in any spelling: a parser keeps the last, so the body is rebuilt
    # and the upstream can only see the routed model.
    for duplicate in (
        b'{"model": "a", "x": 1, "model": "gw-model"}',
        b'{"model": "a", "x": 1, "mod\\u0065l": "b"}',
    ):
        assert orjson.loads(request_body(orjson.loads(duplicate), "up-1", duplicate)) == {
            "model": "up-1",
            "x": 1,
        }


def test_relayed_query_drops_the_gateway_key() -> None:
    assert relayed_query(b"key=ugk_secret&beta=true") == "beta=true"
    assert relayed_query(b"alt=json&key=k&x=1", {"alt": "sse"}) == "x=1&alt=sse"
    assert relayed_query(b"") == ""


def test_limit_estimate_skips_inline_data_and_signatures() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64 * 50}}
    thinking = {"type": "thinking", "thinking": "two words", "signature": "c2ln" * 100}
    payload = _request(messages=[{"role": "user", "content": [image, {"type": "text", "text": "one two"}]},
                                 {"role": "assistant", "content": [thinking]}])  # fmt: skip
    assert prompt_tokens(payload) == prompt_tokens({"a": "one two", "b": "two words"})


def test_configured_betas_are_kept_beside_the_clients(tmp_path: Path) -> None:
    config = ProviderConfig(
        name="c", protocol="anthropic", api_key="k", headers={"Anthropic-Beta": "files-api-2025-04-14"}
    )
    provider = AnthropicProvider(config, ProviderContext(data_dir=tmp_path))
    client = ClientRequest(
        headers={"anthropic-beta": "context-1, files-api-2025-04-14", "anthropic-version": "v"}
    )
    assert provider._relayed_headers(client) == {
        "anthropic-beta": "files-api-2025-04-14,context-1",
        "anthropic-version": "v",
    }
    # Without the client's own betas, the configured header goes out as it is.
    assert provider._relayed_headers(ClientRequest()) == {}
