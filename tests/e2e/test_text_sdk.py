"""The real `openai` SDK against the real `unigate serve` process, once through the sandbox
provider and once through a fake OpenAI-compatible upstream on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.served import ServedGateway

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"],
        },
    },
}


@dataclass
class Backend:
    name: str
    client: openai.OpenAI
    chat_model: str
    embed_model: str
    fake: FakeOpenAI | None
    upstream_chat: str = ""
    upstream_embed: str = ""


@pytest.fixture(scope="module", params=["sandbox", "upstream"])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    workdir = tmp_path_factory.mktemp(request.param)
    if request.param == "sandbox":
        with ServedGateway(workdir) as gw:
            key = gw.create_key()
            # Closed with its backend: left to the collector, its socket was a ResourceWarning in
            # the next backend's setup.
            with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0) as client:
                yield Backend("sandbox", client, "sandbox-chat", "sandbox-embedding", None)
        return
    with FakeOpenAI() as fake:
        config = {
            "providers": [
                {
                    "name": "fake",
                    "protocol": "openai",
                    "base_url": fake.base_url,
                    "api_key": "sk-upstream-secret",
                }
            ],
            "models": [
                {"name": "gw-chat", "routes": [{"provider": "fake", "model": "upstream-chat-v2"}]},
                {"name": "gw-embed", "routes": [{"provider": "fake", "model": "upstream-embed-v1"}]},
            ],
        }
        with ServedGateway(workdir, config=config) as gw:
            key = gw.create_key()
            with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0) as client:
                yield Backend(
                    "upstream", client, "gw-chat", "gw-embed", fake, "upstream-chat-v2", "upstream-embed-v1"
                )


def test_chat_plain(backend: Backend) -> None:
    resp = backend.client.chat.completions.create(
        model=backend.chat_model,
        messages=[{"role": "user", "content": "Tell me about purple elephants"}],
        temperature=0.3,
        user="tester-1",
    )
    assert resp.model == backend.chat_model or backend.fake is not None
    choice = resp.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content
    assert resp.usage is not None and resp.usage.prompt_tokens > 0 and resp.usage.completion_tokens > 0
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    if backend.fake is None:
        assert "elephants" in choice.message.content.lower()
    else:
        seen = backend.fake.received[-1]
        assert seen.path == "/v1/chat/completions"
        assert seen.body["model"] == backend.upstream_chat
        assert seen.body["temperature"] == 0.3 and seen.body["user"] == "tester-1"
        assert seen.body["messages"] == [{"role": "user", "content": "Tell me about purple elephants"}]
        assert seen.headers["authorization"] == "Bearer sk-upstream-secret"
        assert choice.message.content == "Hello from the fake upstream"


def test_chat_multi_turn(backend: Backend) -> None:
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Hello Ada."},
        {"role": "user", "content": "What is my name?"},
    ]
    resp = backend.client.chat.completions.create(model=backend.chat_model, messages=messages)  # type: ignore[arg-type]
    assert resp.choices[0].message.content
    if backend.fake is not None:
        assert backend.fake.received[-1].body["messages"] == messages


def test_chat_stream_with_usage(backend: Backend) -> None:
    stream = backend.client.chat.completions.create(
        model=backend.chat_model,
        messages=[{"role": "user", "content": "Stream a few words about rivers"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces: list[str] = []
    finish = None
    usage = None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason:
                finish = choice.finish_reason
    assert len(pieces) > 2, "the reply should arrive in several chunks"
    assert finish == "stop"
    assert usage is not None and usage.completion_tokens > 0
    if backend.fake is not None:
        assert "".join(pieces).strip() == "Hello from the fake upstream"
        assert backend.fake.received[-1].body["stream_options"] == {"include_usage": True}


def test_chat_stream_without_usage_hides_usage_chunk(backend: Backend) -> None:
    stream = backend.client.chat.completions.create(
        model=backend.chat_model, messages=[{"role": "user", "content": "hi there"}], stream=True
    )
    chunks = list(stream)
    assert chunks and all(c.usage is None for c in chunks)
    assert all(c.choices for c in chunks), "no usage-only chunk when the client did not ask"


def test_tool_call_round_trip(backend: Backend) -> None:
    messages: list[dict[str, object]] = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = backend.client.chat.completions.create(
        model=backend.chat_model,
        messages=messages,
        tools=[WEATHER_TOOL],  # type: ignore[arg-type,list-item]
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather"
    args = json.loads(call.function.arguments)
    assert isinstance(args["city"], str) and args["city"]
    assert args.get("unit", "c") in ("c", "f")
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 21}'})
    second = backend.client.chat.completions.create(
        model=backend.chat_model,
        messages=messages,
        tools=[WEATHER_TOOL],  # type: ignore[arg-type,list-item]
    )
    assert second.choices[0].finish_reason == "stop"
    assert "21" in (second.choices[0].message.content or "")


def test_tool_call_streaming(backend: Backend) -> None:
    stream = backend.client.chat.completions.create(
        model=backend.chat_model,
        messages=[{"role": "user", "content": "Weather in Paris please"}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        stream=True,
    )
    name = ""
    args = ""
    finish = None
    for chunk in stream:
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                assert tc.index == 0
                if tc.function and tc.function.name:
                    name += tc.function.name
                if tc.function and tc.function.arguments:
                    args += tc.function.arguments
            finish = choice.finish_reason or finish
    assert name == "get_weather"
    assert isinstance(json.loads(args)["city"], str)
    assert finish == "tool_calls"


def test_completions_plain_and_stream(backend: Backend) -> None:
    resp = backend.client.completions.create(
        model=backend.chat_model, prompt="Once upon a time", max_tokens=8
    )
    assert resp.choices[0].text
    assert resp.usage is not None and resp.usage.prompt_tokens > 0
    stream = backend.client.completions.create(
        model=backend.chat_model,
        prompt="Once upon a time",
        max_tokens=8,
        stream=True,
        stream_options={"include_usage": True},
    )
    text = ""
    usage = None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.text
    assert text.strip()
    assert usage is not None and usage.completion_tokens > 0
    if backend.fake is not None:
        assert backend.fake.received[-1].body["model"] == backend.upstream_chat
        assert backend.fake.received[-1].body["prompt"] == "Once upon a time"


def test_embeddings_default_base64(backend: Backend) -> None:
    resp = backend.client.embeddings.create(model=backend.embed_model, input=["alpha beta", "gamma"])
    assert len(resp.data) == 2
    assert all(isinstance(x, float) for x in resp.data[0].embedding)
    assert resp.usage.prompt_tokens > 0
    if backend.fake is not None:
        seen = backend.fake.received[-1].body
        assert seen["encoding_format"] == "base64" and seen["model"] == backend.upstream_embed
        assert resp.data[0].embedding == [0.5, -0.25, 0.125, 0.0]


def test_embeddings_float(backend: Backend) -> None:
    resp = backend.client.embeddings.create(
        model=backend.embed_model, input="alpha beta", encoding_format="float"
    )
    assert len(resp.data) == 1 and len(resp.data[0].embedding) >= 4
    if backend.fake is None:
        again = backend.client.embeddings.create(model=backend.embed_model, input="alpha beta")
        assert again.data[0].embedding == pytest.approx(resp.data[0].embedding, rel=1e-6)


def test_models_list(backend: Backend) -> None:
    ids = {m.id for m in backend.client.models.list()}
    assert {backend.chat_model, backend.embed_model} <= ids
