"""Self-test of the fake batch upstreams: the real `openai` and `anthropic` SDKs pointed straight
at them (upload, create, retrieve until the end, result files, cancel, a refused key), their
typed models parsing every answer, so the adapters' tests against the fakes test the adapters."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import orjson
import pytest
from anthropic.types.messages import MessageBatch
from openai.types import Batch

from tests.support.fake_anthropic_batches import FakeAnthropicBatches
from tests.support.fake_openai_batches import FakeOpenAIBatches
from tests.support.waits import until


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIBatches]:
    with FakeOpenAIBatches(run_seconds=0.2, outcomes={"b": "error", "c": "expired"}) as server:
        yield server


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropicBatches]:
    with FakeAnthropicBatches(run_seconds=0.2, outcomes={"b": "error", "c": "expired"}) as server:
        yield server


def _jsonl(*custom_ids: str) -> bytes:
    rows = [
        {
            "custom_id": c,
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "gpt-x", "messages": [{"role": "user", "content": c}]},
        }
        for c in custom_ids
    ]
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)


def test_the_openai_sdk_runs_a_batch_on_the_fake(fake_openai: FakeOpenAIBatches) -> None:
    client = openai.OpenAI(base_url=fake_openai.base_url, api_key=fake_openai.api_key, max_retries=0)
    uploaded = client.files.create(file=("in.jsonl", io.BytesIO(_jsonl("a", "b", "c"))), purpose="batch")
    assert uploaded.purpose == "batch" and uploaded.bytes > 0
    batch = client.batches.create(
        input_file_id=uploaded.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"k": "v"},
    )
    assert batch.status == "validating" and batch.metadata == {"k": "v"}

    def ended() -> Batch | None:
        found = client.batches.retrieve(batch.id)
        return found if found.status not in ("validating", "in_progress") else None

    done = until(ended, "the batch's end")
    assert done is not None
    assert done.status == "expired"
    assert done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (3, 1, 2)
    assert done.output_file_id and done.error_file_id
    output = [orjson.loads(line) for line in client.files.content(done.output_file_id).read().splitlines()]
    errors = [orjson.loads(line) for line in client.files.content(done.error_file_id).read().splitlines()]
    assert [row["custom_id"] for row in output] == ["a"]
    assert output[0]["response"]["status_code"] == 200
    assert output[0]["response"]["body"]["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
    }
    assert [(row["custom_id"], row["response"] and row["response"]["status_code"]) for row in errors] == [
        ("b", 400),
        ("c", None),
    ]
    assert errors[1]["error"]["code"] == "batch_expired"


def test_the_openai_sdk_cancels_and_is_refused_on_the_fake(fake_openai: FakeOpenAIBatches) -> None:
    fake_openai.run_seconds = 30
    client = openai.OpenAI(base_url=fake_openai.base_url, api_key=fake_openai.api_key, max_retries=0)
    uploaded = client.files.create(file=("in.jsonl", io.BytesIO(_jsonl("a", "b"))), purpose="batch")
    batch = client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    assert client.batches.cancel(batch.id).status == "cancelling"
    assert client.batches.retrieve(batch.id).status == "cancelling"
    cancelled = client.batches.retrieve(batch.id)
    assert cancelled.status == "cancelled" and cancelled.error_file_id and not cancelled.output_file_id
    wrong = openai.OpenAI(base_url=fake_openai.base_url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.batches.retrieve(batch.id)
    with pytest.raises(openai.BadRequestError, match="endpoint"):
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/nope", completion_window="24h")  # type: ignore[arg-type]


def test_the_anthropic_sdk_runs_a_batch_on_the_fake(fake_anthropic: FakeAnthropicBatches) -> None:
    client = anthropic.Anthropic(
        base_url=fake_anthropic.base_url, api_key=fake_anthropic.api_key, max_retries=0
    )
    requests = [
        {
            "custom_id": c,
            "params": {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": c}]},
        }
        for c in "abcd"
    ]
    fake_anthropic.outcomes["d"] = "canceled"
    batch = client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
    assert batch.processing_status == "in_progress" and batch.request_counts.processing == 4

    def ended() -> MessageBatch | None:
        found = client.messages.batches.retrieve(batch.id)
        return found if found.processing_status == "ended" else None

    done = until(ended, "the batch's end")
    assert done is not None
    counts = done.request_counts
    assert (counts.succeeded, counts.errored, counts.expired, counts.canceled) == (1, 1, 1, 1)
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    ok = results["a"]
    assert (
        ok.type == "succeeded" and ok.message.usage.input_tokens == 20 and ok.message.usage.output_tokens == 7
    )
    errored = results["b"]
    assert errored.type == "errored" and errored.error.error.type == "invalid_request_error"
    assert results["c"].type == "expired" and results["d"].type == "canceled"
    wrong = anthropic.Anthropic(base_url=fake_anthropic.base_url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        wrong.messages.batches.retrieve(batch.id)


def test_the_anthropic_sdk_cancels_on_the_fake(fake_anthropic: FakeAnthropicBatches) -> None:
    fake_anthropic.run_seconds = 30
    client = anthropic.Anthropic(
        base_url=fake_anthropic.base_url, api_key=fake_anthropic.api_key, max_retries=0
    )
    params: Any = {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    batch = client.messages.batches.create(requests=[{"custom_id": "a", "params": params}])
    canceling = client.messages.batches.cancel(batch.id)
    assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None
    client.messages.batches.retrieve(batch.id)
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.request_counts.canceled == 1
    assert [r.result.type for r in client.messages.batches.results(batch.id)] == ["canceled"]
