"""`POST /v1/messages` with the real `anthropic` SDK against the real gateway: through the
sandbox and through a fake OpenAI-compatible upstream (Anthropic format in, OpenAI upstream)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anthropic
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.served import ServedGateway

TOOL = {
    "name": "get_weather",
    "description": "Weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@dataclass
class Case:
    client: anthropic.Anthropic
    model: str
    fake: FakeOpenAI | None
    key: str


@pytest.fixture(scope="module", params=["sandbox", "openai-upstream"])
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Case]:
    workdir = Path(tmp_path_factory.mktemp(request.param))
    if request.param == "sandbox":
        # The client is closed with its case: left to the collector, its keep-alive socket was a
        # ResourceWarning in the next case's setup.
        with ServedGateway(workdir) as gw:
            key = gw.create_key()
            with anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0) as client:
                yield Case(client, "sandbox-chat", None, key)
        return
    with FakeOpenAI() as fake:
        config = {
            "providers": [
                {"name": "oa", "protocol": "openai", "base_url": fake.base_url, "api_key": "sk-up"}
            ],
            "models": [{"name": "claude-like", "routes": [{"provider": "oa", "model": "gpt-up"}]}],
        }
        with ServedGateway(workdir, config=config) as gw:
            key = gw.create_key()
            with anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0) as client:
                yield Case(client, "claude-like", fake, key)


def test_plain_message(case: Case) -> None:
    msg = case.client.messages.create(
        model=case.model,
        max_tokens=100,
        system="Be brief.",
        messages=[{"role": "user", "content": "Tell me about lighthouses"}],
    )
    assert msg.type == "message" and msg.role == "assistant" and msg.stop_reason == "end_turn"
    text = "".join(b.text for b in msg.content if b.type == "text")
    assert text
    assert msg.usage.input_tokens > 0 and msg.usage.output_tokens > 0
    if case.fake is None:
        assert "lighthouses" in text.lower()
    else:
        sent = case.fake.received[-1].body
        assert sent["model"] == "gpt-up" and sent["messages"][0] == {"role": "system", "content": "Be brief."}
        assert text == "Hello from the fake upstream"


def test_streaming_events(case: Case) -> None:
    with case.client.messages.stream(
        model=case.model, max_tokens=100, messages=[{"role": "user", "content": "Stream about rivers"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text.strip() and final.stop_reason == "end_turn" and final.usage.output_tokens > 0


def test_tool_use_round_trip(case: Case) -> None:
    first = case.client.messages.create(
        model=case.model,
        max_tokens=200,
        tools=[TOOL],  # type: ignore[list-item]
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
    )
    assert first.stop_reason == "tool_use"
    use = next(b for b in first.content if b.type == "tool_use")
    assert use.name == "get_weather" and isinstance(use.input, dict) and isinstance(use.input["city"], str)
    second = case.client.messages.create(
        model=case.model,
        max_tokens=200,
        tools=[TOOL],  # type: ignore[list-item]
        messages=[
            {"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": first.content},  # type: ignore[typeddict-item]
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny 24"}],
            },
        ],
    )
    assert second.stop_reason == "end_turn"
    assert "24" in "".join(b.text for b in second.content if b.type == "text")


def test_errors_in_anthropic_shape(case: Case) -> None:
    bad = anthropic.Anthropic(base_url=str(case.client.base_url), api_key="ugk_wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as auth:
        bad.messages.create(model=case.model, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert auth.value.body["type"] == "error" and auth.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    with pytest.raises(anthropic.NotFoundError):
        case.client.messages.create(
            model="no-such", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(anthropic.BadRequestError) as bad_req:
        case.client.messages.create(model=case.model, max_tokens=10, messages=[])
    assert bad_req.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


@pytest.mark.parametrize("case", ["openai-upstream"], indirect=True)  # only an upstream can die
def test_upstream_death_mid_stream_is_an_error_event(case: Case) -> None:
    assert case.fake is not None
    case.fake.mode = "die_mid"
    try:
        with (
            pytest.raises(anthropic.APIError),
            case.client.messages.stream(
                model=case.model, max_tokens=50, messages=[{"role": "user", "content": "Stream"}]
            ) as stream,
        ):
            for _ in stream.text_stream:
                pass
    finally:
        case.fake.mode = "ok"
