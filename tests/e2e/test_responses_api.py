"""The Responses API against the sandbox, with the real `openai` SDK and a real gateway
process: create (plain, streamed, parsed into a pydantic model), function tools, stored state
(`previous_response_id` chains, retrieve, delete, input items), owner scoping, hosted tools
refused, unhonoured fields named, usage counted like chat, and a conversation continued on a
second gateway process sharing the database."""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from tests.support.net import http
from tests.support.readme import section
from tests.support.served import ServedGateway

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    with ServedGateway(Path(tmp_path_factory.mktemp("responses"))) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def client(gw: ServedGateway) -> Iterator[openai.OpenAI]:
    # Closed here: a module-scoped client outlives the per-test closing of SDK clients, and one
    # finalized by the cycle collector may drop its pooled socket unclosed (a ResourceWarning).
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0) as client:
        yield client


def test_plain_create_is_stored_and_retrievable(client: openai.OpenAI) -> None:
    resp = client.responses.create(
        model="sandbox-chat", input="Hello there, tell me about Paris", instructions="Be brief."
    )
    assert resp.object == "response" and resp.id.startswith("resp_") and resp.status == "completed"
    assert 'You said: "Hello there, tell me about Paris"' in resp.output_text
    assert "Following the instructions" in resp.output_text
    assert resp.usage is not None and resp.usage.input_tokens > 0 and resp.usage.output_tokens > 0
    assert resp.usage.total_tokens == resp.usage.input_tokens + resp.usage.output_tokens
    again = client.responses.retrieve(resp.id)
    assert again.model_dump() == resp.model_dump()
    items = client.responses.input_items.list(resp.id)
    assert [(i.type, i.role) for i in items.data] == [("message", "user")]  # type: ignore[union-attr]
    assert items.data[0].content[0].text == "Hello there, tell me about Paris"  # type: ignore[union-attr]


def test_stream_events_end_in_a_stored_response(client: openai.OpenAI) -> None:
    events = list(client.responses.create(model="sandbox-chat", input="Stream about Rome", stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response  # type: ignore[union-attr]
    assert final.output_text == text and final.usage is not None and final.usage.output_tokens > 0
    # Stored before the final event was sent: retrievable at once.
    assert client.responses.retrieve(final.id).output_text == text
    with client.responses.stream(model="sandbox-chat", input="Stream about Oslo") as stream:
        helper = stream.get_final_response()
    assert "Oslo" in helper.output_text


def test_function_tool_round_trip_with_previous_response_id(client: openai.OpenAI) -> None:
    first = client.responses.create(
        model="sandbox-chat", input="What is the weather in Paris?", tools=[WEATHER]
    )  # type: ignore[list-item]
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and "city" in json.loads(call.arguments)
    second = client.responses.create(
        model="sandbox-chat",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 24C"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert second.status == "completed" and "sunny, 24C" in second.output_text
    assert second.previous_response_id == first.id


def test_streamed_tool_call(client: openai.OpenAI) -> None:
    events = list(
        client.responses.create(model="sandbox-chat", input="Weather in Lima?", tools=[WEATHER], stream=True)  # type: ignore[list-item]
    )
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert len(done) == 1 and "city" in json.loads(done[0].arguments)  # type: ignore[union-attr]
    final = events[-1].response  # type: ignore[union-attr]
    assert [o.type for o in final.output] == ["function_call"]


class City(BaseModel):
    name: str
    population: int
    landmarks: list[str]


def test_parse_with_a_pydantic_model(client: openai.OpenAI) -> None:
    parsed = client.responses.parse(model="sandbox-chat", input="Describe Paris", text_format=City)
    assert isinstance(parsed.output_parsed, City)
    plain = client.responses.create(
        model="sandbox-chat", input="Anything as JSON", text={"format": {"type": "json_object"}}
    )
    assert isinstance(json.loads(plain.output_text), dict)


def test_three_turn_chain(client: openai.OpenAI) -> None:
    one = client.responses.create(model="sandbox-chat", input="My name is Ada")
    two = client.responses.create(model="sandbox-chat", input="I live in Paris", previous_response_id=one.id)
    three = client.responses.create(
        model="sandbox-chat", input="What do you know?", previous_response_id=two.id
    )
    assert "turn 2" in two.output_text and "turn 3" in three.output_text
    assert "I live in Paris" in three.output_text  # "Earlier I said: …" quotes turn two's answer


def test_delete_and_missing_ids(client: openai.OpenAI) -> None:
    resp = client.responses.create(model="sandbox-chat", input="Delete me")
    client.responses.delete(resp.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(resp.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="sandbox-chat", input="x", previous_response_id=resp.id)
    unstored = client.responses.create(model="sandbox-chat", input="Forget me", store=False)
    assert unstored.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)


def test_another_keys_response_is_not_found(gw: ServedGateway, client: openai.OpenAI) -> None:
    resp = client.responses.create(model="sandbox-chat", input="Mine")
    other = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(name="other"), max_retries=0)
    for call in (
        lambda: other.responses.retrieve(resp.id),
        lambda: other.responses.input_items.list(resp.id),
        lambda: other.responses.delete(resp.id),
        lambda: other.responses.create(model="sandbox-chat", input="x", previous_response_id=resp.id),
    ):
        with pytest.raises(openai.NotFoundError) as info:
            call()
        assert info.value.body["type"] == "invalid_request_error"  # type: ignore[index]
    assert client.responses.retrieve(resp.id).id == resp.id  # still there for its owner


def test_hosted_tools_without_equivalent_are_dropped_by_name(client: openai.OpenAI) -> None:
    # Web search has one on every route; code_interpreter none on a translated one (refused
    # instead under `hosted_tools: reject`: test_responses_codex).
    searched = client.responses.create(
        model="sandbox-chat", input="Search the web", tools=[{"type": "web_search"}]
    )
    assert [item.type for item in searched.output] == ["web_search_call", "message"]
    raw = client.responses.with_raw_response.create(
        model="sandbox-chat",
        input="Weather in Paris?",
        tools=[WEATHER, {"type": "code_interpreter", "container": {"type": "auto"}}],  # type: ignore[list-item]
    )
    assert raw.headers["x-unigate-dropped-fields"] == "tools.code_interpreter"
    assert [item.type for item in raw.parse().output] == ["function_call"]


def test_unhonoured_fields_are_named_in_a_header(client: openai.OpenAI) -> None:
    raw = client.responses.with_raw_response.create(
        model="sandbox-chat", input="Hi", reasoning={"effort": "low"}, top_logprobs=3, temperature=0.3
    )
    assert raw.headers["x-unigate-dropped-fields"] == "reasoning, temperature, top_logprobs"
    plain = client.responses.with_raw_response.create(model="sandbox-chat", input="Hi")
    assert "x-unigate-dropped-fields" not in plain.headers


def test_bad_requests_in_openai_shape(gw: ServedGateway, client: openai.OpenAI) -> None:
    key = client.api_key
    for body, param in (
        ({"input": "x"}, "model"),
        ({"model": "sandbox-chat"}, "input"),
        ({"model": "sandbox-chat", "input": "x", "max_output_tokens": "many"}, "max_output_tokens"),
        (
            {"model": "sandbox-chat", "input": [{"type": "message", "role": "robot", "content": "x"}]},
            "input[0].role",
        ),
    ):
        res = http("POST", gw.base_url + "/v1/responses", body, {"Authorization": f"Bearer {key}"})
        assert res.status == 400 and res.json()["error"]["param"] == param, res.body
    res = http(
        "POST",
        gw.base_url + "/v1/responses",
        {"model": "nope", "input": "x"},
        {"Authorization": f"Bearer {key}"},
    )
    assert res.status == 404 and res.json()["error"]["code"] == "model_not_found"


def _usage(gw: ServedGateway, key_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        rows = gw.admin("GET", "/admin/usage?group_by=key,endpoint").json()["data"]
        mine = [r for r in rows if r["key_id"] == key_id]
        if mine or time.monotonic() > deadline:
            return mine[0] if mine else {}
        time.sleep(0.2)


def test_usage_is_counted_like_chat(gw: ServedGateway) -> None:
    record = gw.create_key_record(name="counted")
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=record["key"], max_retries=0)
    resp = client.responses.create(model="sandbox-chat", input="Count me")
    streamed = list(client.responses.create(model="sandbox-chat", input="Count me too", stream=True))
    final = streamed[-1].response  # type: ignore[union-attr]
    deadline = time.monotonic() + 10
    row = _usage(gw, record["id"])
    while row.get("requests") != 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        row = _usage(gw, record["id"])
    assert row["endpoint"] == "chat" and row["requests"] == 2
    assert resp.usage is not None and final.usage is not None
    assert row["prompt_tokens"] == resp.usage.input_tokens + final.usage.input_tokens
    assert row["completion_tokens"] == resp.usage.output_tokens + final.usage.output_tokens


def test_a_second_gateway_process_continues_the_conversation(
    gw: ServedGateway, client: openai.OpenAI, tmp_path: Path
) -> None:
    first = client.responses.create(model="sandbox-chat", input="My name is Grace")
    database = f"sqlite:///{gw.workdir / 'data' / 'unigate.db'}"
    with ServedGateway(tmp_path, env={"UNIGATE_DATABASE_URL": database}) as second:
        there = openai.OpenAI(base_url=second.base_url + "/v1", api_key=client.api_key, max_retries=0)
        two = there.responses.create(model="sandbox-chat", input="Second turn", previous_response_id=first.id)
        assert "turn 2" in two.output_text
    three = client.responses.create(model="sandbox-chat", input="Third turn", previous_response_id=two.id)
    assert "turn 3" in three.output_text


def test_the_readme_example(gw: ServedGateway, client: openai.OpenAI) -> None:
    [block] = re.findall(r"```python\n(.*?)```", section("Responses API"), re.S)
    code = block.replace("http://127.0.0.1:8000", gw.base_url).replace('"ugk_..."', repr(client.api_key))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/responses.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert "Ada" in lines[0]  # the second turn saw the first
    assert lines[1].strip()  # the streamed text
    assert lines[2] == "queued"
    assert lines[3].startswith("completed ") and len(lines[3]) > len("completed ")
