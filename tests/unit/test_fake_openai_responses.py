"""Self-test of the fake native Responses upstream: the real `openai` SDK pointed straight at it
(create, stream, stream helper, tool round trip, a 3-turn chain, retrieve, delete, cancel,
input_items, a resumed stream, failures), so the gateway's tests against it test the gateway."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import openai
import orjson
import pytest

from tests.support.fake_openai_responses import FakeOpenAIResponses

WEATHER_TOOL: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


@pytest.fixture
def fake() -> Iterator[FakeOpenAIResponses]:
    with FakeOpenAIResponses() as server:
        yield server


def client_for(fake: FakeOpenAIResponses) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)


def test_plain_create_and_what_was_received(fake: FakeOpenAIResponses) -> None:
    resp = client_for(fake).responses.create(
        model="gpt-fake", input="Tell me about rivers", instructions="Be terse.", metadata={"k": "v"}
    )
    assert resp.status == "completed" and resp.model == "gpt-fake" and resp.id.startswith("resp_")
    assert resp.output_text.startswith("Hello from the fake Responses upstream (turn 1;")
    assert resp.usage is not None and resp.usage.input_tokens == 6  # 4 words of input + 2 of instructions
    assert resp.usage.output_tokens == len(resp.output_text.split())
    assert resp.instructions == "Be terse." and resp.metadata == {"k": "v"}
    seen = fake.received[-1]
    assert (seen.method, seen.path) == ("POST", "/v1/responses")
    assert seen.headers["authorization"] == "Bearer sk-fake"
    assert orjson.loads(seen.raw) == {
        "input": "Tell me about rivers",
        "instructions": "Be terse.",
        "metadata": {"k": "v"},
        "model": "gpt-fake",
    }


def test_stream_events_in_order(fake: FakeOpenAIResponses) -> None:
    events = list(client_for(fake).responses.create(model="gpt-fake", input="Say hello", stream=True))
    kinds = [e.type for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    done = events[-1]
    assert done.type == "response.completed" and done.response.output_text == deltas
    assert done.response.usage is not None and done.response.usage.output_tokens == len(deltas.split())
    raw = fake.received[-1].body
    assert raw["stream"] is True


def test_stream_helper_final_response(fake: FakeOpenAIResponses) -> None:
    with client_for(fake).responses.stream(model="gpt-fake", input="Say hello") as stream:
        texts = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(texts) == final.output_text and final.status == "completed"


def test_function_tool_round_trip(fake: FakeOpenAIResponses) -> None:
    client = client_for(fake)
    first = client.responses.create(model="gpt-fake", input="Weather in Paris?", tools=[WEATHER_TOOL])
    call = first.output[0]
    assert call.type == "function_call" and call.name == "get_weather"
    assert orjson.loads(call.arguments) == {"city": "Paris"}
    second = client.responses.create(
        model="gpt-fake",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "22C and sunny"}],
        tools=[WEATHER_TOOL],
    )
    assert second.output_text == "The tool said: 22C and sunny"
    assert second.previous_response_id == first.id


def test_stream_function_call(fake: FakeOpenAIResponses) -> None:
    with client_for(fake).responses.stream(
        model="gpt-fake", input="Weather in Paris?", tools=[WEATHER_TOOL]
    ) as stream:
        args = "".join(e.delta for e in stream if e.type == "response.function_call_arguments.delta")
        final = stream.get_final_response()
    assert args == '{"city":"Paris"}' and final.output[0].type == "function_call"


def test_three_turn_chain_keeps_history(fake: FakeOpenAIResponses) -> None:
    client = client_for(fake)
    one = client.responses.create(model="gpt-fake", input="My name is Ada.")
    two = client.responses.create(model="gpt-fake", input="I like rivers.", previous_response_id=one.id)
    three = client.responses.create(model="gpt-fake", input="What is my name?", previous_response_id=two.id)
    assert "(turn 3; first message: My name is Ada.)" in three.output_text
    assert three.usage is not None and two.usage is not None
    assert three.usage.input_tokens > two.usage.input_tokens  # the history is counted in


def test_unknown_previous_response_is_400(fake: FakeOpenAIResponses) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client_for(fake).responses.create(model="gpt-fake", input="hi", previous_response_id="resp_nope")
    assert info.value.code == "previous_response_not_found"


def test_retrieve_delete_input_items(fake: FakeOpenAIResponses) -> None:
    client = client_for(fake)
    resp = client.responses.create(
        model="gpt-fake",
        input=[
            {"role": "developer", "content": "Be kind."},
            {"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        ],
    )
    again = client.responses.retrieve(resp.id)
    assert again.id == resp.id and again.output_text == resp.output_text
    items = client.responses.input_items.list(resp.id)
    assert [i.role for i in items.data] == ["user", "developer"]  # newest first by default
    asc = client.responses.input_items.list(resp.id, order="asc", limit=1)
    assert [i.role for i in asc.data] == ["developer"] and asc.has_more
    assert fake.received[-1].query == "limit=1&order=asc"
    client.responses.delete(resp.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(resp.id)
    unstored = client.responses.create(model="gpt-fake", input="Forget me", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)


def test_background_poll_and_cancel(fake: FakeOpenAIResponses) -> None:
    client = client_for(fake)
    queued = client.responses.create(model="gpt-fake", input="Slow job", background=True)
    assert queued.status == "queued" and queued.output == []
    seen = set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        state = client.responses.retrieve(queued.id)
        seen.add(state.status)
        if state.status == "completed":
            break
        time.sleep(0.05)
    assert state.status == "completed" and state.output_text and "in_progress" in seen
    later = client.responses.create(model="gpt-fake", input="Cancel me", background=True)
    assert client.responses.cancel(later.id).status == "cancelled"
    time.sleep(fake.background_seconds * 1.5)
    assert client.responses.retrieve(later.id).status == "cancelled"
    sync = client.responses.create(model="gpt-fake", input="Quick")
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(sync.id)


def test_resume_stream_starting_after(fake: FakeOpenAIResponses) -> None:
    client = client_for(fake)
    resp = client.responses.create(model="gpt-fake", input="Replay me", background=True)
    time.sleep(fake.background_seconds * 1.5)
    events = list(client.responses.retrieve(resp.id, stream=True, starting_after=3))
    assert events[0].sequence_number == 4 and events[-1].type == "response.completed"


def test_mid_stream_death_raises(fake: FakeOpenAIResponses) -> None:
    fake.mode = "die_mid"
    got = []
    with pytest.raises(openai.APIConnectionError):
        for event in client_for(fake).responses.create(model="gpt-fake", input="Say hello", stream=True):
            got.append(event.type)
    first = [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert got == first[: len(got)] and fake.die_after == len(first)


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("fail500", openai.InternalServerError),
        ("fail429", openai.RateLimitError),
        ("reject400", openai.BadRequestError),
    ],
)
def test_scripted_failures(fake: FakeOpenAIResponses, mode: str, error: type[Exception]) -> None:
    fake.mode = mode
    with pytest.raises(error):
        client_for(fake).responses.create(model="gpt-fake", input="hi")
