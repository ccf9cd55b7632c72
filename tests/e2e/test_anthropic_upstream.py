"""The `anthropic` upstream adapter: the real `openai` SDK against the real gateway, routed to a
fake Anthropic Messages upstream on 127.0.0.1 (requests and streams translated both ways)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.served import ServedGateway

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[openai.OpenAI, FakeAnthropic]]:
    with FakeAnthropic() as fake:
        config = {
            "providers": [
                {
                    "name": "claude",
                    "protocol": "anthropic",
                    "base_url": fake.base_url,
                    "api_key": "sk-ant-upstream",
                }
            ],
            "models": [{"name": "claude-chat", "routes": [{"provider": "claude", "model": "claude-up-1"}]}],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("anthropic")), config=config) as gw:
            yield openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0), fake


def test_plain_chat_is_translated_both_ways(setup: tuple[openai.OpenAI, FakeAnthropic]) -> None:
    client, fake = setup
    resp = client.chat.completions.create(
        model="claude-chat",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}],
        max_tokens=50,
        stop=["END"],
    )
    assert resp.choices[0].message.content == "Hello from the fake Anthropic upstream"
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None and (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (21, 9)
    sent, headers = fake.received[-1], fake.headers[-1]
    assert sent["model"] == "claude-up-1" and sent["max_tokens"] == 50 and sent["stop_sequences"] == ["END"]
    assert "Be brief." in json.dumps(sent["system"]) and sent["messages"][0]["role"] == "user"
    assert headers["x-api-key"] == "sk-ant-upstream" and headers["anthropic-version"] == "2023-06-01"


def test_streaming_with_usage(setup: tuple[openai.OpenAI, FakeAnthropic]) -> None:
    client, _ = setup
    stream = client.chat.completions.create(
        model="claude-chat",
        messages=[{"role": "user", "content": "Stream it"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = "", None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert text.strip() == "Hello from the fake Anthropic upstream"
    assert finish == "stop" and usage is not None and usage.completion_tokens == 9


def test_tool_call_round_trip(setup: tuple[openai.OpenAI, FakeAnthropic]) -> None:
    client, fake = setup
    messages: list[dict[str, object]] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model="claude-chat", messages=messages, tools=[TOOL])  # type: ignore[arg-type,list-item]
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert first.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert fake.received[-1]["tools"][0]["input_schema"]["required"] == ["city"]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny, 24C"})
    second = client.chat.completions.create(model="claude-chat", messages=messages, tools=[TOOL])  # type: ignore[arg-type,list-item]
    assert "sunny" in (second.choices[0].message.content or "")
    sent = fake.received[-1]["messages"]
    assert (
        sent[-1]["content"][0]["type"] == "tool_result" and sent[-1]["content"][0]["tool_use_id"] == call.id
    )


def test_streamed_tool_call(setup: tuple[openai.OpenAI, FakeAnthropic]) -> None:
    client, _ = setup
    stream = client.chat.completions.create(
        model="claude-chat",
        messages=[{"role": "user", "content": "Weather?"}],
        tools=[TOOL],
        stream=True,  # type: ignore[list-item]
    )
    name, args, finish = "", "", None
    for chunk in stream:
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                name += (tc.function.name or "") if tc.function else ""
                args += (tc.function.arguments or "") if tc.function else ""
            finish = choice.finish_reason or finish
    assert name == "get_weather" and json.loads(args) == {"city": "Paris"} and finish == "tool_calls"


def test_upstream_dying_mid_stream_raises_in_band(setup: tuple[openai.OpenAI, FakeAnthropic]) -> None:
    client, fake = setup
    fake.mode = "die_mid"
    try:
        stream = client.chat.completions.create(
            model="claude-chat", messages=[{"role": "user", "content": "Stream it"}], stream=True
        )
        with pytest.raises(openai.APIError):
            for _ in stream:
                pass
    finally:
        fake.mode = "ok"
