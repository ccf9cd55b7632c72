"""The Responses API relayed natively: the real `openai` SDK through a real gateway process to an
`openai` provider configured `responses: native`, whose upstream is the fake that serves
`/v1/responses` itself. The body reaches the upstream byte for byte apart from the model id,
answers and typed event streams come back as it sent them, `previous_response_id` chains are
relayed (the upstream keeps the history), lookups go to the upstream, a death mid-stream makes
the SDK raise, and usage is counted from the upstream's own figures."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest

from tests.support.fake_openai_responses import FakeOpenAIResponses, Seen
from tests.support.served import ServedGateway

SECRET = "sk-upstream-native-0123456789"
UPSTREAM = "upstream-resp-v2"
WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeOpenAIResponses, ServedGateway]]:
    with FakeOpenAIResponses() as fake:
        config = {
            "providers": [
                {
                    "name": "native",
                    "protocol": "openai",
                    "base_url": fake.base_url,
                    "api_key": SECRET,
                    "responses": "native",
                }
            ],
            "models": [
                {"name": "gw-resp", "routes": [{"provider": "native", "model": UPSTREAM}]},
                {"name": "gw-same", "routes": [{"provider": "native"}]},  # the id sent as is
            ],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("native")), config=config) as gw:
            yield fake, gw


@pytest.fixture
def fake(rig: tuple[FakeOpenAIResponses, ServedGateway]) -> Iterator[FakeOpenAIResponses]:
    rig[0].mode = "ok"
    yield rig[0]
    rig[0].mode = "ok"


@pytest.fixture(scope="module")
def client(rig: tuple[FakeOpenAIResponses, ServedGateway]) -> Iterator[openai.OpenAI]:
    gw = rig[1]
    # Closed here: a module-scoped client outlives the per-test closing of SDK clients, and one
    # finalized by the cycle collector may drop its pooled socket unclosed (a ResourceWarning).
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0) as client:
        yield client


def creates(fake: FakeOpenAIResponses) -> list[Seen]:
    return [s for s in fake.received if s.method == "POST" and s.path == "/v1/responses"]


def test_body_relayed_byte_for_byte_apart_from_the_model(
    client: openai.OpenAI, fake: FakeOpenAIResponses
) -> None:
    raw = client.responses.with_raw_response.create(
        model="gw-resp",
        input=[{"role": "user", "content": "Grüße aus Köln 👋, tell me about rivers"}],
        instructions="Be terse.",
        metadata={"model": "gw-resp", "ticket": "T-1"},
        temperature=0.3,
        max_output_tokens=64,
        extra_body={"prompt_cache_key": "k-1", "service_tier": "flex"},
    )
    sent = raw.http_request.content
    resp = raw.parse()
    received = creates(fake)[-1]
    assert received.raw == sent.replace(b'"model":"gw-resp"', f'"model":"{UPSTREAM}"'.encode(), 1)
    assert received.body["metadata"] == {"model": "gw-resp", "ticket": "T-1"}  # only the top-level id
    assert received.headers["authorization"] == f"Bearer {SECRET}"
    assert resp.model == UPSTREAM and resp.status == "completed"  # the upstream's answer, as sent
    assert resp.output_text.startswith("Hello from the fake Responses upstream (turn 1;")
    assert resp.usage is not None and resp.usage.input_tokens == 10  # 8 words said + 2 of instructions
    unmapped = client.responses.with_raw_response.create(model="gw-same", input="Same id", store=False)
    assert creates(fake)[-1].raw == unmapped.http_request.content  # nothing to map: the very bytes


def test_stream_relayed_event_by_event(client: openai.OpenAI, fake: FakeOpenAIResponses) -> None:
    events = list(client.responses.create(model="gw-resp", input="Stream a few words", stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response  # type: ignore[union-attr]
    assert text == final.output_text and "(turn 1; first message: Stream a few words)" in text
    assert creates(fake)[-1].body["stream"] is True and creates(fake)[-1].body["model"] == UPSTREAM
    with client.responses.stream(model="gw-resp", input="Again, streamed") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        done = stream.get_final_response()
    assert "".join(deltas) == done.output_text and done.status == "completed"


def test_function_tool_round_trip(client: openai.OpenAI, fake: FakeOpenAIResponses) -> None:
    first = client.responses.create(model="gw-resp", input="Weather in Paris?", tools=[WEATHER])
    call = first.output[0]
    assert call.type == "function_call" and call.name == "get_weather"
    assert orjson.loads(call.arguments) == {"city": "Paris"}
    second = client.responses.create(
        model="gw-resp",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "22C and sunny"}],
        tools=[WEATHER],
    )
    assert second.output_text == "The tool said: 22C and sunny"
    sent = creates(fake)[-1].body
    assert sent["previous_response_id"] == first.id  # relayed: the upstream holds the call
    assert sent["input"] == [
        {"type": "function_call_output", "call_id": call.call_id, "output": "22C and sunny"}
    ]


def test_three_turn_chain_relayed(client: openai.OpenAI, fake: FakeOpenAIResponses) -> None:
    one = client.responses.create(model="gw-resp", input="My name is Ada.")
    two = client.responses.create(model="gw-resp", input="I like rivers.", previous_response_id=one.id)
    with client.responses.stream(model="gw-resp", input="What is my name?", previous_response_id=two.id) as s:
        three = s.get_final_response()
    assert "(turn 3; first message: My name is Ada.)" in three.output_text
    sent = [s.body for s in creates(fake)[-3:]]
    assert [b.get("previous_response_id") for b in sent] == [None, one.id, two.id]
    assert [b["input"] for b in sent] == ["My name is Ada.", "I like rivers.", "What is my name?"]


def test_lookups_go_to_the_upstream(client: openai.OpenAI, fake: FakeOpenAIResponses) -> None:
    resp = client.responses.create(
        model="gw-resp",
        input=[{"role": "developer", "content": "Be kind."}, {"role": "user", "content": "Hi"}],
    )
    assert client.responses.retrieve(resp.id).output_text == resp.output_text
    items = client.responses.input_items.list(resp.id, order="asc", limit=1)
    assert [i.role for i in items.data] == ["developer"] and items.has_more  # type: ignore[union-attr]
    assert fake.received[-1].path == f"/v1/responses/{resp.id}/input_items"
    client.responses.delete(resp.id)
    assert resp.id not in fake.stored  # the upstream's copy is gone too
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(resp.id)


def test_mid_stream_death_raises(client: openai.OpenAI, fake: FakeOpenAIResponses) -> None:
    fake.mode = "die_mid"
    got: list[str] = []
    with pytest.raises(openai.APIError):
        for event in client.responses.create(model="gw-resp", input="Say hello", stream=True):
            got.append(event.type)
    assert got[:2] == ["response.created", "response.in_progress"] and "response.completed" not in got


def test_upstream_rejection_relayed_without_the_key(client: openai.OpenAI, fake: FakeOpenAIResponses) -> None:
    fake.mode = "reject400"
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="gw-resp", input="hi")
    assert "the request is bad" in info.value.message and SECRET not in str(info.value.body)


def test_usage_counted_from_the_upstream(rig: tuple[FakeOpenAIResponses, ServedGateway]) -> None:
    gw = rig[1]
    record = gw.create_key_record(name="native-counted")
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=record["key"], max_retries=0)
    plain = client.responses.create(model="gw-resp", input="Count me")
    streamed = list(client.responses.create(model="gw-resp", input="Count me too", stream=True))
    final = streamed[-1].response  # type: ignore[union-attr]
    assert plain.usage is not None and final.usage is not None
    want = (
        plain.usage.input_tokens + final.usage.input_tokens,
        plain.usage.output_tokens + final.usage.output_tokens,
    )
    deadline = time.monotonic() + 10
    while True:
        rows = gw.admin("GET", "/admin/usage?group_by=key").json()["data"]
        mine = [r for r in rows if r["key_id"] == record["id"]]
        if (mine and mine[0]["requests"] == 2) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert mine and mine[0]["requests"] == 2
    assert (mine[0]["prompt_tokens"], mine[0]["completion_tokens"]) == want


def test_azure_v1_surface(tmp_path: Path) -> None:
    with FakeOpenAIResponses(prefix="/openai/v1") as azure:
        config = {
            "providers": [
                {
                    "name": "azure",
                    "protocol": "azure",
                    "base_url": azure.base_url + "?api-version=preview",
                    "api_key": SECRET,
                    "responses": "native",
                }
            ],
            "models": [{"name": "gw-azure", "routes": [{"provider": "azure", "model": "my-deployment"}]}],
        }
        with ServedGateway(tmp_path, config=config) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            plain = client.responses.create(model="gw-azure", input="Hello Azure")
            events = list(client.responses.create(model="gw-azure", input="Stream, Azure", stream=True))
            items = client.responses.input_items.list(plain.id, limit=1)
    assert plain.model == "my-deployment" and "first message: Hello Azure" in plain.output_text
    assert events[-1].type == "response.completed" and items.data[0].content[0].text == "Hello Azure"  # type: ignore[union-attr]
    create, streamed, listed = azure.received
    assert (create.path, create.query) == ("/openai/v1/responses", "api-version=preview")
    assert create.headers["api-key"] == SECRET and create.body["model"] == "my-deployment"
    assert streamed.body["stream"] is True
    assert (listed.path, listed.query) == (
        f"/openai/v1/responses/{plain.id}/input_items",
        "limit=1&api-version=preview",
    )
