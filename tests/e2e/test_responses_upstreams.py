"""The Responses API on every upstream protocol, with the real `openai` SDK: a chat-only
OpenAI-compatible upstream, Anthropic and Gemini (translated through chat completions), an
OpenAI upstream with its own `/responses` (relayed), and the sandbox. Each gets a plain call,
a stream, a function-tool round trip and a three-turn `previous_response_id` chain; an
upstream dying mid-stream makes the SDK raise."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_responses import FakeOpenAIResponses
from tests.support.served import ServedGateway

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
MODELS = ("chat-only", "claude-chat", "gemini-chat", "native-chat", "sandbox-chat")


@dataclass
class Upstreams:
    client: openai.OpenAI
    chat: FakeOpenAI
    claude: FakeAnthropic
    gemini: FakeGemini
    native: FakeOpenAIResponses

    def sent_turns(self, model: str) -> int:
        """User turns in the last request the model's upstream received (its view of history)."""
        if model == "chat-only":
            return _roles(self.chat.received[-1].body["messages"]).count("user")
        if model == "claude-chat":
            return _roles(self.claude.received[-1]["messages"]).count("user")
        if model == "gemini-chat":
            return _roles(self.gemini.received[-1][1]["contents"]).count("user")
        raise AssertionError(model)


def _roles(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("role")) for m in messages]


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstreams]:
    with (
        FakeOpenAI() as chat,
        FakeAnthropic() as claude,
        FakeGemini() as gemini,
        FakeOpenAIResponses() as native,
    ):
        config = {
            "sandbox": {"enabled": True},
            "providers": [
                {"name": "chat", "protocol": "openai", "base_url": chat.base_url, "api_key": "sk-chat"},
                {"name": "claude", "protocol": "anthropic", "base_url": claude.base_url, "api_key": "sk-ant"},
                {"name": "gem", "protocol": "gemini", "base_url": gemini.base_url, "api_key": "AIza-up"},
                {
                    "name": "native",
                    "protocol": "openai",
                    "base_url": native.base_url,
                    "api_key": "sk-native",
                    "responses": "native",
                },
            ],
            "models": [
                {"name": "chat-only", "routes": [{"provider": "chat", "model": "gpt-up"}]},
                {"name": "claude-chat", "routes": [{"provider": "claude", "model": "claude-up"}]},
                {"name": "gemini-chat", "routes": [{"provider": "gem", "model": "gemini-up"}]},
                {"name": "native-chat", "routes": [{"provider": "native", "model": "gpt-native"}]},
            ],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("responses-up")), config=config) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            yield Upstreams(client, chat, claude, gemini, native)


@pytest.mark.parametrize("model", MODELS)
def test_plain(up: Upstreams, model: str) -> None:
    resp = up.client.responses.create(
        model=model, input="Hello there", instructions="Be brief.", max_output_tokens=200
    )
    assert resp.status == "completed" and resp.output_text
    assert resp.model == ("gpt-native" if model == "native-chat" else model)  # a relay answers as is
    assert resp.usage is not None and resp.usage.input_tokens > 0 and resp.usage.output_tokens > 0
    assert up.client.responses.retrieve(resp.id).output_text == resp.output_text


@pytest.mark.parametrize("model", MODELS)
def test_stream(up: Upstreams, model: str) -> None:
    events = list(up.client.responses.create(model=model, input="Stream a reply", stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response  # type: ignore[union-attr]
    assert text and final.output_text == text and final.usage is not None and final.usage.output_tokens > 0
    assert up.client.responses.retrieve(final.id).output_text == text


@pytest.mark.parametrize("model", MODELS)
def test_function_tool_round_trip(up: Upstreams, model: str) -> None:
    first = up.client.responses.create(model=model, input="What is the weather in Paris?", tools=[WEATHER])  # type: ignore[list-item]
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and "city" in json.loads(call.arguments)
    second = up.client.responses.create(
        model=model,
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 24C"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert "sunny, 24C" in second.output_text


@pytest.mark.parametrize("model", MODELS)
def test_three_turn_chain(up: Upstreams, model: str) -> None:
    one = up.client.responses.create(model=model, input="My name is Ada")
    two = up.client.responses.create(model=model, input="I live in Paris", previous_response_id=one.id)
    three = up.client.responses.create(model=model, input="What do you know?", previous_response_id=two.id)
    assert three.previous_response_id == two.id and three.status == "completed"
    if model == "sandbox-chat":
        assert "turn 3" in three.output_text
    elif model == "native-chat":
        # Relayed: the upstream holds the conversation and was told which response it continues.
        assert up.native.received[-1].body["previous_response_id"] == two.id
        assert "turn 3; first message: My name is Ada" in three.output_text
    else:
        assert up.sent_turns(model) == 3  # the conversation, rebuilt from stored rows


def _die(up: Upstreams, model: str) -> Callable[[], None]:
    fake: Any = {
        "chat-only": up.chat,
        "claude-chat": up.claude,
        "gemini-chat": up.gemini,
        "native-chat": up.native,
    }[model]
    fake.mode = "die_mid"

    def restore() -> None:
        fake.mode = "ok"

    return restore


@pytest.mark.parametrize("model", MODELS[:4])
def test_upstream_dying_mid_stream_makes_the_sdk_raise(up: Upstreams, model: str) -> None:
    restore = _die(up, model)
    try:
        seen: list[str] = []
        with pytest.raises(openai.APIError):
            for event in up.client.responses.create(model=model, input="A long story please", stream=True):
                seen.append(event.type)
        assert "response.created" in seen and "response.completed" not in seen
    finally:
        restore()
    # The gateway is fine afterwards.
    assert up.client.responses.create(model=model, input="Again").status == "completed"
