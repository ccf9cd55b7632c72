"""Batches driven by the real SDKs against an in-process gateway on the sandbox: OpenAI's
`batches.create/retrieve/list/cancel` with `files.create/content` for the input and result
files, Anthropic's `messages.batches.*` with its results,
a bad input file's every line named, owner scoping, and the batch id in `/admin/usage`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.support.batch_files import content, upload
from tests.support.served import ServedGateway
from tests.support.waits import until


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    # One attempt per line: a line retried after the key's own 429 would fail the test below.
    config = {"sandbox": {"enabled": True}, "batches": {"max_attempts": 1}}
    with ServedGateway(tmp_path_factory.mktemp("batches"), config=config) as gw:
        yield gw


def _key(gw: ServedGateway) -> tuple[str, str]:
    record = gw.create_key_record()
    return str(record["key"]), str(record["id"])


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"\n".join(json.dumps(line).encode() for line in lines) + b"\n"


def _chat_line(i: int, model: str = "sandbox-chat") -> dict[str, Any]:
    body = {"model": model, "messages": [{"role": "user", "content": f"line {i}"}], "max_tokens": 20}
    return {"custom_id": f"req-{i}", "method": "POST", "url": "/v1/chat/completions", "body": body}


def test_openai_sdk_batch_runs_every_line_once(served: ServedGateway) -> None:
    gw = served
    key, key_id = _key(gw)
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    input_id = upload(client, _jsonl([_chat_line(i) for i in range(30)]))
    batch = client.batches.create(
        input_file_id=input_id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"job": "t1"},
    )
    assert batch.object == "batch" and batch.status in ("validating", "in_progress", "completed")
    assert batch.metadata == {"job": "t1"} and batch.endpoint == "/v1/chat/completions"
    done = until(
        lambda: (b := client.batches.retrieve(batch.id)).status == "completed" and b, "batch completed", 20
    )
    assert done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (
        30,
        30,
        0,
    )
    for stamp in (
        done.created_at,
        done.in_progress_at,
        done.finalizing_at,
        done.completed_at,
        done.expires_at,
    ):
        assert isinstance(stamp, int) and stamp > 0
    assert done.error_file_id is None and done.output_file_id is not None
    out = [json.loads(line) for line in content(client, done.output_file_id).splitlines()]
    assert sorted(line["custom_id"] for line in out) == sorted(f"req-{i}" for i in range(30))
    for line in out:
        assert line["error"] is None and line["response"]["status_code"] == 200
        assert line["response"]["request_id"] == line["id"]
        assert line["response"]["body"]["object"] == "chat.completion"
    listed = client.batches.list(limit=5)
    assert batch.id in [b.id for b in listed.data]
    with pytest.raises(openai.ConflictError):
        client.batches.cancel(batch.id)  # a completed batch is not cancellable
    # Every line accounted like a direct call, under the batch's id.
    rows = until(
        lambda: [r for r in gw.admin("GET", "/admin/usage?group_by=batch,key").json()["data"]
                 if r["batch"] == batch.id],
        "usage rows of the batch",
    )  # fmt: skip
    assert rows == [dict(rows[0], requests=30)] and rows[0]["key_id"] == key_id


def test_openai_bad_input_file_fails_naming_every_bad_line(served: ServedGateway) -> None:
    gw = served
    key, _ = _key(gw)
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    good = _chat_line(0)
    lines = [
        json.dumps(good).encode(),
        b"{not json",
        json.dumps({**good, "custom_id": None}).encode(),
        json.dumps(good).encode(),  # the same custom_id again
        json.dumps({**good, "custom_id": "m", "method": "GET"}).encode(),
        json.dumps({**good, "custom_id": "u", "url": "/v1/embeddings"}).encode(),
        json.dumps({**good, "custom_id": "b", "body": [1]}).encode(),
        json.dumps({**good, "custom_id": "x", "body": {**good["body"], "model": "no-such-model"}}).encode(),
        json.dumps({**good, "custom_id": "s", "body": {**good["body"], "stream": True}}).encode(),
    ]
    input_id = upload(client, b"\n".join(lines))
    batch = client.batches.create(
        input_file_id=input_id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    failed = until(lambda: (b := client.batches.retrieve(batch.id)).status == "failed" and b, "batch failed")
    assert failed.failed_at and failed.errors is not None and failed.errors.data is not None
    named = [(e.line, e.code, e.param) for e in failed.errors.data]
    assert named == [
        (2, "invalid_json_line", None),
        (3, "missing_required_parameter", "custom_id"),
        (4, "duplicate_custom_id", "custom_id"),
        (5, "invalid_method", "method"),
        (6, "mismatched_endpoint", "url"),
        (7, "invalid_request", "body"),
        (8, "model_not_found", "body.model"),
        (9, "invalid_request", "body.stream"),
    ]
    assert all(e.message for e in failed.errors.data)
    assert failed.request_counts is not None and failed.request_counts.total == 0  # nothing ran


def test_openai_create_refusals(served: ServedGateway) -> None:
    gw = served
    key, _ = _key(gw)
    other_key, _ = _key(gw)
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    other = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=other_key, max_retries=0)
    theirs = upload(other, _jsonl([_chat_line(0)]))
    with pytest.raises(openai.NotFoundError):  # another key's file
        client.batches.create(input_file_id=theirs, endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.BadRequestError) as refused:
        client.batches.create(input_file_id=theirs, endpoint="/v1/nothing", completion_window="24h")  # type: ignore[arg-type]
    assert refused.value.param == "endpoint"  # type: ignore[attr-defined]


def test_anthropic_sdk_message_batch(served: ServedGateway) -> None:
    gw = served
    key, _ = _key(gw)
    client = anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0)
    requests: list[Any] = [
        {"custom_id": f"r{i}", "params": {"model": "sandbox-chat", "max_tokens": 16,
                                          "messages": [{"role": "user", "content": f"hello {i}"}]}}
        for i in range(12)
    ]  # fmt: skip
    batch = client.messages.batches.create(requests=requests)
    assert batch.type == "message_batch" and batch.processing_status == "in_progress"
    assert (
        batch.results_url is None and batch.request_counts.processing + batch.request_counts.succeeded == 12
    )
    ended = until(
        lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b,
        "ended",
        20,
    )
    assert ended.request_counts.succeeded == 12 and ended.request_counts.processing == 0
    assert ended.ended_at is not None and ended.results_url is not None
    results = list(client.messages.batches.results(batch.id))
    assert [r.custom_id for r in results] == [f"r{i}" for i in range(12)]
    for r in results:
        assert r.result.type == "succeeded"
        assert r.result.message.content[0].type == "text"  # type: ignore[union-attr]
    assert batch.id in [b.id for b in client.messages.batches.list(limit=10).data]
    again = client.messages.batches.cancel(batch.id)  # an ended batch stays as it ended
    assert again.processing_status == "ended" and again.request_counts.canceled == 0
    # Another key sees none of it.
    stranger = anthropic.Anthropic(base_url=gw.base_url, api_key=_key(gw)[0], max_retries=0)
    with pytest.raises(anthropic.NotFoundError):
        stranger.messages.batches.retrieve(batch.id)
    with pytest.raises(anthropic.NotFoundError):
        list(stranger.messages.batches.results(batch.id))
    with pytest.raises(anthropic.NotFoundError):
        stranger.messages.batches.cancel(batch.id)
    assert stranger.messages.batches.list().data == []
    deleted = client.messages.batches.delete(batch.id)
    assert deleted.type == "message_batch_deleted"
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve(batch.id)


def test_anthropic_bad_request_names_the_field(served: ServedGateway) -> None:
    gw = served
    client = anthropic.Anthropic(base_url=gw.base_url, api_key=_key(gw)[0], max_retries=0)
    params: Any = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "x"}]}  # no max_tokens
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.batches.create(requests=[{"custom_id": "a", "params": params}])
    assert "requests[0].params" in str(refused.value)
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


def test_openai_owner_scoping(served: ServedGateway) -> None:
    gw = served
    key, _ = _key(gw)
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    batch = client.batches.create(
        input_file_id=upload(client, _jsonl([_chat_line(0)])),
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )
    stranger = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=_key(gw)[0], max_retries=0)
    with pytest.raises(openai.NotFoundError):
        stranger.batches.retrieve(batch.id)
    with pytest.raises(openai.NotFoundError):
        stranger.batches.cancel(batch.id)
    assert stranger.batches.list().data == []


def test_lines_refused_by_the_keys_own_limit_wait_their_turn(
    served: ServedGateway,
) -> None:
    gw = served
    key = gw.create_key(rpm=120)
    direct = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    message: Any = [{"role": "user", "content": "interactive"}]
    with pytest.raises(openai.RateLimitError):  # the key's whole allowance is spent
        for _ in range(200):
            direct.chat.completions.create(model="sandbox-chat", messages=message)
    client = anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0)
    params: Any = {"model": "sandbox-chat", "max_tokens": 8, "messages": message}
    batch = client.messages.batches.create(
        requests=[{"custom_id": f"w{i}", "params": params} for i in range(3)]
    )
    ended = until(
        lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b,
        "ended",
        30,
    )
    # The gateway's own limit is no upstream failure: no attempt is spent on it, however many.
    assert ended.request_counts.succeeded == 3 and ended.request_counts.errored == 0


def test_an_input_file_of_another_purpose_is_refused(served: ServedGateway) -> None:
    gw = served
    key, _ = _key(gw)
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    vision = upload(client, _jsonl([_chat_line(0)]), purpose="vision")
    with pytest.raises(openai.BadRequestError) as refused:
        client.batches.create(input_file_id=vision, endpoint="/v1/chat/completions", completion_window="24h")
    assert refused.value.param == "input_file_id"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("endpoint", "body", "answer"),
    [
        ("/v1/embeddings", {"model": "sandbox-embedding", "input": "some text"}, "list"),
        ("/v1/completions", {"model": "sandbox-chat", "prompt": "Once", "max_tokens": 8}, "text_completion"),
        ("/v1/responses", {"model": "sandbox-chat", "input": "Hello", "store": False}, "response"),
        ("/v1/moderations", {"input": "a kind word"}, None),  # no model: OpenAI's default one
    ],
)
def test_every_openai_batch_endpoint_runs_its_direct_call(
    served: ServedGateway, endpoint: str, body: dict[str, Any], answer: str | None
) -> None:
    key, _ = _key(served)
    client = openai.OpenAI(base_url=served.base_url + "/v1", api_key=key, max_retries=0)
    lines = [{"custom_id": f"e{i}", "method": "POST", "url": endpoint, "body": body} for i in range(3)]
    batch = client.batches.create(
        input_file_id=upload(client, _jsonl(lines)),
        endpoint=endpoint,
        completion_window="24h",  # type: ignore[arg-type]
    )
    done = until(
        lambda: (b := client.batches.retrieve(batch.id)).status == "completed" and b, "completed", 20
    )
    assert done.request_counts is not None and done.request_counts.completed == 3, done.errors
    for line in content(client, done.output_file_id).splitlines():
        result = json.loads(line)["response"]
        assert result["status_code"] == 200
        if answer is not None:
            assert result["body"]["object"] == answer
        else:
            assert result["body"]["results"][0]["flagged"] is False


def test_the_sdks_page_through_a_keys_batches_newest_first(served: ServedGateway) -> None:
    key, _ = _key(served)
    claude = anthropic.Anthropic(base_url=served.base_url, api_key=key, max_retries=0)
    params: Any = {"model": "sandbox-chat", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    made = [
        claude.messages.batches.create(requests=[{"custom_id": "a", "params": params}]).id for _ in range(5)
    ]
    assert [b.id for b in claude.messages.batches.list(limit=2)] == made[::-1]  # every page, in order
    newer = claude.messages.batches.list(limit=2, before_id=made[1])
    assert [b.id for b in newer.data] == [made[3], made[2]]
    client = openai.OpenAI(base_url=served.base_url + "/v1", api_key=key, max_retries=0)
    input_id = upload(client, _jsonl([_chat_line(0)]))
    runs = [
        client.batches.create(
            input_file_id=input_id, endpoint="/v1/chat/completions", completion_window="24h"
        ).id
        for _ in range(5)
    ]
    assert [b.id for b in client.batches.list(limit=2)] == runs[::-1]
