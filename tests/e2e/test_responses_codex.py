"""What the Codex CLI (`codex exec`, a custom provider with `wire_api = "responses"`) sends, on
every translated route, with the real `openai` SDK: namespace, custom and web search tools,
`include`, `store: false`, replayed reasoning; the namespace and the custom tool come back on
the calls. Then hosted tools without an equivalent: dropped and named by default (logged once
per key), refused after a reload with `hosted_tools: reject`, for Responses (background runs
included), Anthropic and Gemini clients alike, while a route of the client's own format still
runs them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import yaml

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tests.support.net import http
from tests.support.served import ServedGateway

TRANSLATED = ("sandbox-chat", "chat-only", "claude-chat", "gemini-chat")
CRM: dict[str, Any] = {
    "type": "namespace",
    "name": "crm",
    "description": "Customer records.",
    "tools": [
        {
            "type": "function",
            "name": "lookup",
            "description": "Find a customer record by name",
            "strict": False,
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        }
    ],
}
SHELL: dict[str, Any] = {
    "type": "function",
    "name": "shell",
    "description": "Runs a shell command",
    "strict": False,
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
PATCH: dict[str, Any] = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Apply a patch to files",
    "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" /(.|\\n)*/'},
}
USER = {
    "type": "message",
    "role": "user",
    "content": [{"type": "input_text", "text": "Find the customer Ada"}],
}


def codex_request(model: str, items: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A turn as Codex sends it: the whole conversation each time, nothing stored upstream."""
    return {
        "model": model,
        "instructions": "You are a coding agent running in the Codex CLI.",
        "input": items,
        "tools": [*tools, {"type": "web_search"}],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199a1b2-thread",
        "text": {"verbosity": "medium"},
    }


@dataclass
class Gateway:
    gw: ServedGateway
    key: str
    client: openai.OpenAI
    claude: FakeAnthropic


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with FakeOpenAI() as chat, FakeAnthropic() as claude, FakeGemini() as gemini:
        config = {
            "sandbox": {"enabled": True},
            "providers": [
                {"name": "chat", "protocol": "openai", "base_url": chat.base_url, "api_key": "sk-chat"},
                {"name": "claude", "protocol": "anthropic", "base_url": claude.base_url, "api_key": "sk-ant"},
                {"name": "gem", "protocol": "gemini", "base_url": gemini.base_url, "api_key": "AIza-up"},
            ],
            "models": [
                {"name": "chat-only", "routes": [{"provider": "chat", "model": "gpt-up"}]},
                {"name": "claude-chat", "routes": [{"provider": "claude", "model": "claude-up"}]},
                {"name": "gemini-chat", "routes": [{"provider": "gem", "model": "gemini-up"}]},
            ],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("codex")), config=config) as gw:
            key = gw.create_key()
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
            yield Gateway(gw, key, client, claude)


@pytest.mark.parametrize("model", TRANSLATED)
def test_codex_turns_round_trip_a_namespaced_call(up: Gateway, model: str) -> None:
    first = up.client.responses.with_raw_response.create(**codex_request(model, [USER], [CRM, SHELL, PATCH]))
    dropped = first.headers["x-unigate-dropped-fields"].split(", ")
    assert "include.reasoning.encrypted_content" in dropped and "reasoning.summary" in dropped
    response = first.parse()
    [call] = [item for item in response.output if item.type == "function_call"]
    assert call.namespace == "crm" and call.name == "lookup" and json.loads(call.arguments)
    # Codex replays the whole turn: its reasoning item, the call as it came, the output.
    replay = [
        USER,
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB"},
        {"type": "function_call", "call_id": call.call_id, "name": "lookup", "namespace": "crm",
         "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "Ada Lovelace, London"},
    ]  # fmt: skip
    events = list(
        up.client.responses.create(**codex_request(model, replay, [CRM, SHELL, PATCH]), stream=True)
    )
    final = events[-1].response  # type: ignore[union-attr]
    assert events[-1].type == "response.completed" and "Ada Lovelace, London" in final.output_text
    with pytest.raises(openai.NotFoundError):  # store: false
        up.client.responses.retrieve(response.id)


def test_codex_custom_tool_round_trip(up: Gateway) -> None:
    ask = {**USER, "content": [{"type": "input_text", "text": "apply a patch to the readme"}]}
    events = list(
        up.client.responses.create(**codex_request("sandbox-chat", [ask], [SHELL, PATCH]), stream=True)
    )
    kinds = [e.type for e in events]
    assert (
        "response.custom_tool_call_input.done" in kinds
        and "response.function_call_arguments.delta" not in kinds
    )
    [call] = events[-1].response.output  # type: ignore[union-attr]
    assert call.type == "custom_tool_call" and call.name == "apply_patch" and call.input
    replay = [
        ask,
        {"type": "custom_tool_call", "call_id": call.call_id, "name": "apply_patch", "input": call.input},
        {"type": "custom_tool_call_output", "call_id": call.call_id, "output": "Success. Updated README.md"},
    ]
    answer = up.client.responses.create(**codex_request("sandbox-chat", replay, [SHELL, PATCH]))
    assert "apply_patch returned: Success. Updated README.md" in answer.output_text


# ---------------------------------------------------------------- hosted tools without equivalent

FILE_SEARCH = {"type": "file_search", "vector_store_ids": ["vs_1"]}
CODE_EXECUTION = {"type": "code_execution_20250522", "name": "code_execution"}


CODE_INTERPRETER = {"type": "code_interpreter", "container": {"type": "auto"}}


def _background(up: Gateway, tool: dict[str, Any]) -> Any:
    """A background response offering `tool`, once it has ended."""
    tools: list[Any] = [tool]
    accepted = up.client.responses.create(model="sandbox-chat", input="hello", tools=tools, background=True)
    deadline = time.monotonic() + 20
    while (done := up.client.responses.retrieve(accepted.id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return done


def _anthropic(up: Gateway, model: str) -> tuple[int, dict[str, str], Any]:
    body = {"model": model, "max_tokens": 50, "messages": [{"role": "user", "content": "Compute 2+2"}],
            "tools": [CODE_EXECUTION]}  # fmt: skip
    res = http(
        "POST",
        up.gw.base_url + "/v1/messages",
        body,
        {"x-api-key": up.key, "anthropic-version": "2023-06-01"},
    )
    return res.status, res.headers, res.json()


def _gemini(up: Gateway) -> tuple[int, dict[str, str], Any]:
    body = {"contents": [{"parts": [{"text": "Compute 2+2"}]}], "tools": [{"codeExecution": {}}]}
    res = http("POST", up.gw.base_url + "/v1beta/models/sandbox-chat:generateContent", body,
               {"x-goog-api-key": up.key})  # fmt: skip
    return res.status, res.headers, res.json()


def test_hosted_tools_are_dropped_named_and_logged_once(up: Gateway) -> None:
    for _ in range(2):
        raw = up.client.responses.with_raw_response.create(
            model="sandbox-chat",
            input="hello",
            tools=[SHELL, FILE_SEARCH],  # type: ignore[list-item]
        )
        assert raw.status_code == 200 and "tools.file_search" in raw.headers["x-unigate-dropped-fields"]
    status, headers, _ = _anthropic(up, "sandbox-chat")
    assert status == 200 and headers["x-unigate-dropped-fields"] == "tools.code_execution_20250522"
    status, headers, _ = _gemini(up)
    assert status == 200 and headers["x-unigate-dropped-fields"] == "tools.codeExecution"
    log = up.gw.log()
    assert log.count("hosted tool file_search dropped") == 1
    assert "hosted tool code_execution_20250522 dropped" in log and "hosted tool codeExecution dropped" in log
    # A background run follows the same policy: the tool dropped and logged.
    done = _background(up, CODE_INTERPRETER)
    assert done.status == "completed", done.error
    assert "hosted tool code_interpreter dropped" in up.gw.log()


def test_reject_setting_refuses_them_on_translated_routes_only(up: Gateway) -> None:
    path = Path(up.gw.env["UNIGATE_CONFIG"])
    config = {**yaml.safe_load(path.read_text()), "hosted_tools": "reject"}
    path.with_suffix(".new").write_text(yaml.safe_dump(config))
    os.replace(path.with_suffix(".new"), path)
    assert up.gw.admin("POST", "/admin/reload").status == 200
    with pytest.raises(openai.BadRequestError) as info:
        up.client.responses.create(model="sandbox-chat", input="hello", tools=[FILE_SEARCH])  # type: ignore[list-item]
    assert info.value.code == "unsupported_tool" and "file_search" in info.value.message
    failed = _background(up, FILE_SEARCH)  # a background run is refused alike
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "unsupported_tool" and "file_search" in failed.error.message
    status, _, body = _anthropic(up, "sandbox-chat")
    assert status == 400 and body["type"] == "error" and "code_execution_20250522" in body["error"]["message"]
    status, _, body = _gemini(up)
    assert (
        status == 400
        and body["error"]["status"] == "INVALID_ARGUMENT"
        and "codeExecution" in body["error"]["message"]
    )
    # An Anthropic upstream runs Anthropic's own server tools: relayed, not refused.
    status, headers, body = _anthropic(up, "claude-chat")
    assert status == 200 and "x-unigate-dropped-fields" not in headers
    assert up.claude.received[-1]["tools"] == [CODE_EXECUTION]
    # Web search has an equivalent everywhere, so it is never refused.
    assert up.client.responses.create(model="sandbox-chat", input="x", tools=[{"type": "web_search"}]).output
    client = anthropic.Anthropic(base_url=up.gw.base_url, api_key=up.key, max_retries=0)
    message = client.messages.create(
        model="sandbox-chat",
        max_tokens=50,
        messages=[{"role": "user", "content": "x"}],
        tools=[{"type": "web_search_20250305", "name": "web_search"}],
    )
    assert message.content[0].type == "server_tool_use"
