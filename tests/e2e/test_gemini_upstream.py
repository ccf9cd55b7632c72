"""The `gemini` upstream adapter: the real `openai` SDK against the real gateway, routed to a
fake Gemini API on 127.0.0.1 (requests, answers and CRLF-framed streams translated)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.support.fake_gemini import FakeGemini
from tests.support.served import ServedGateway

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[openai.OpenAI, FakeGemini]]:
    with FakeGemini() as fake:
        config = {
            "providers": [
                {"name": "g", "protocol": "gemini", "base_url": fake.base_url, "api_key": "AIza-up"}
            ],
            "models": [{"name": "gem-chat", "routes": [{"provider": "g", "model": "gemini-up-2"}]}],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("gemini")), config=config) as gw:
            yield openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0), fake


def test_plain(setup: tuple[openai.OpenAI, FakeGemini]) -> None:
    client, fake = setup
    resp = client.chat.completions.create(
        model="gem-chat",
        messages=[{"role": "system", "content": "Brief."}, {"role": "user", "content": "Hi"}],
        max_tokens=40,
    )
    assert resp.choices[0].message.content == "Hello from the fake Gemini upstream"
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None and (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (17, 8)
    path, body, headers = fake.received[-1]
    assert path.startswith("gemini-up-2:generateContent")
    assert headers.get("x-goog-api-key") == "AIza-up" and "key=" not in path
    assert body["systemInstruction"]["parts"][0]["text"] == "Brief."
    assert body["generationConfig"]["maxOutputTokens"] == 40


def test_stream_with_usage(setup: tuple[openai.OpenAI, FakeGemini]) -> None:
    client, fake = setup
    stream = client.chat.completions.create(
        model="gem-chat",
        messages=[{"role": "user", "content": "Stream"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = "", None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert text.strip() == "Hello from the fake Gemini upstream" and finish == "stop"
    assert usage is not None and usage.completion_tokens == 8
    assert fake.received[-1][0] == "gemini-up-2:streamGenerateContent?alt=sse"


def test_tool_call_round_trip(setup: tuple[openai.OpenAI, FakeGemini]) -> None:
    client, fake = setup
    messages: list[dict[str, object]] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model="gem-chat", messages=messages, tools=[TOOL])  # type: ignore[arg-type,list-item]
    assert first.choices[0].finish_reason == "tool_calls"
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    declared = fake.received[-1][1]["tools"][0]["functionDeclarations"][0]["parameters"]
    assert "additionalProperties" not in declared, "keys Gemini rejects are stripped"
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 24}'})
    second = client.chat.completions.create(model="gem-chat", messages=messages, tools=[TOOL])  # type: ignore[arg-type,list-item]
    assert "24" in (second.choices[0].message.content or "")
    parts = fake.received[-1][1]["contents"][-1]["parts"]
    assert parts[0]["functionResponse"]["name"] == "get_weather"
