"""A batch whose lines all route to a provider with its own batch API is relayed there whole
(a test double of `NativeBatches` on the provider): submitted once with the upstream model ids,
polled until over, its results written as the batch's lines and accounted with the vendor's
discount; a cancel is passed on; a key with a budget keeps its batches on the gateway; a submit
the vendor took but whose id was never stored is found and adopted by the next worker, not sent
again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest

from tests.support.batch_files import chat_batch, content
from tests.support.fake_anthropic_batches import FakeAnthropicBatches
from tests.support.fake_openai_batches import FakeOpenAIBatches
from tests.support.flaky_openai import FlakyOpenAI
from tests.support.served import ServedGateway
from tests.support.waits import until


@dataclass(frozen=True)
class State:
    status: str
    total: int
    succeeded: int
    errored: int
    error: str | None = None


@dataclass(frozen=True)
class Result:
    custom_id: str
    status_code: int
    body: dict[str, Any] | None
    error: dict[str, Any] | None
    usage: dict[str, int]
    kind: str = "succeeded"


@dataclass
class FakeNative:
    """The vendor's batch API: ends after `polls` polls (or once cancelled); line 1 errors."""

    polls: int = 2
    discount: float = 0.5
    submitted: list[tuple[str, list[Any], dict[str, str]]] = field(default_factory=list)
    polled: int = 0
    cancelled: bool = False

    async def submit(self, endpoint: str, lines: Sequence[Any], metadata: dict[str, str]) -> str:
        self.submitted.append((endpoint, list(lines), metadata))
        return "up_batch_1"

    async def poll(self, upstream_id: str) -> State:
        self.polled += 1
        total = len(self.submitted[0][1])
        if self.cancelled:
            return State("cancelled", total, 0, total)
        return State("ended" if self.polled >= self.polls else "running", total, total - 1, 1)

    async def results(self, upstream_id: str) -> AsyncIterator[Result]:
        for i, line in enumerate(self.submitted[0][1]):
            if self.cancelled:
                yield Result(
                    line.custom_id, 0, None, None, {"prompt_tokens": 0, "completion_tokens": 0}, "canceled"
                )
            elif i == 1:
                error = {"code": "invalid_request", "message": "bad line"}
                yield Result(line.custom_id, 400, {"error": error}, error,
                             {"prompt_tokens": 0, "completion_tokens": 0}, "errored")  # fmt: skip
            else:
                body = {
                    "object": "chat.completion",
                    "model": line.body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "native"}}],
                }
                tokens = {"prompt_tokens": 1000, "completion_tokens": 1000}
                yield Result(line.custom_id, 200, body, None, tokens)

    async def cancel(self, upstream_id: str) -> None:
        self.cancelled = True


@pytest.fixture
def relayed(
    gateway_factory: Any,
) -> Iterator[tuple[ServedGateway, FakeNative, FlakyOpenAI]]:
    with FlakyOpenAI(flaky=False) as fake:
        config = {
            "providers": [
                # pragma: allowlist nextline secret
                {"name": "vendor", "protocol": "openai", "base_url": fake.base_url, "api_key": "sk"}
            ],
            "models": [{"name": "chat-x", "routes": [{"provider": "vendor", "model": "gpt-up"}],
                        "input_per_million": 1.0, "output_per_million": 1.0}],
            "tasks": {"poll_interval": 0.05},
        }  # fmt: skip
        gw = gateway_factory(config)
        native = FakeNative()
        gw.app.gateway.providers["vendor"].native_batches = lambda: native
        yield gw, native, fake


def _submit(gw: ServedGateway, n: int, **key: Any) -> tuple[openai.OpenAI, str, str]:
    record = gw.create_key_record(**key)
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=record["key"], max_retries=0)
    batch = chat_batch(client, n, "chat-x")
    return client, batch.id, record["id"]


def test_a_batch_routed_to_one_native_provider_is_relayed_whole(relayed: Any) -> None:
    gw, native, fake = relayed
    client, batch_id, _ = _submit(gw, 4)
    done = until(
        lambda: (b := client.batches.retrieve(batch_id)).status == "completed" and b, "completed", 20
    )
    assert done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (4, 3, 1)
    assert len(native.submitted) == 1 and fake.received == []  # nothing went line by line
    endpoint, lines, metadata = native.submitted[0]
    assert endpoint == "/v1/chat/completions" and metadata == {"unigate_batch_id": batch_id}
    assert [line.custom_id for line in lines] == ["c0", "c1", "c2", "c3"]
    assert {line.body["model"] for line in lines} == {"gpt-up"}  # the upstream's id
    out = [json.loads(x) for x in content(client, done.output_file_id).splitlines()]
    assert [x["custom_id"] for x in out] == ["c0", "c2", "c3"]
    assert out[0]["response"]["body"]["choices"][0]["message"]["content"] == "native"
    errors = [json.loads(x) for x in content(client, done.error_file_id).splitlines()]
    assert errors[0]["custom_id"] == "c1" and errors[0]["response"]["status_code"] == 400
    usage = until(
        lambda: [r for r in gw.admin("GET", "/admin/usage?group_by=batch").json()["data"] if r["batch"]],
        "usage written",
    )
    # 2,000 tokens at 1 per million, half price, for each of the 3 lines that succeeded.
    assert usage[0]["batch"] == batch_id and usage[0]["requests"] == 4
    assert usage[0]["cost"] == pytest.approx(3 * 0.002 * 0.5)
    assert "relayed to vendor" in gw.log()


def test_a_cancel_is_passed_on_to_the_upstream_batch(relayed: Any) -> None:
    gw, native, _ = relayed
    native.polls = 10_000  # runs until cancelled
    client, batch_id, _ = _submit(gw, 3)
    until(lambda: native.polled >= 2, "the relay polls")
    client.batches.cancel(batch_id)
    done = until(
        lambda: (b := client.batches.retrieve(batch_id)).status == "cancelled" and b, "cancelled", 20
    )
    assert native.cancelled and done.request_counts is not None
    assert (done.request_counts.completed, done.request_counts.failed) == (0, 3)


def test_a_key_with_a_budget_keeps_its_batch_on_the_gateway(relayed: Any) -> None:
    gw, native, fake = relayed
    client, batch_id, _ = _submit(gw, 3, budget=10.0)
    until(lambda: client.batches.retrieve(batch_id).status == "completed", "completed", 20)
    assert native.submitted == [] and len(fake.received) == 3


def test_an_anthropic_batch_relayed_to_the_vendors_message_batches(gateway_factory: Any) -> None:
    # The native adapter against the fake Anthropic batch API: the engine end to end.
    with FakeAnthropicBatches(outcomes={"b": "error"}) as vendor:
        config = {
            "providers": [{"name": "claude", "protocol": "anthropic", "base_url": vendor.base_url,
                           "api_key": vendor.api_key, "batches": "native"}],
            "models": [{"name": "claude-x", "routes": [{"provider": "claude", "model": "claude-up"}],
                        "input_per_million": 1.0, "output_per_million": 1.0}],
            "tasks": {"poll_interval": 0.05},
        }  # fmt: skip
        gw = gateway_factory(config)
        client = anthropic.Anthropic(base_url=gw.base_url, api_key=gw.create_key(), max_retries=0)
        params: Any = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
        batch = client.messages.batches.create(requests=[{"custom_id": c, "params": params} for c in "abc"])
        ended = until(
            lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b,
            "ended",
            20,
        )
        assert (ended.request_counts.succeeded, ended.request_counts.errored) == (2, 1)
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
        assert results["a"].type == "succeeded" and results["b"].type == "errored"
        assert results["a"].message.content[0].type == "text"  # type: ignore[union-attr]
        assert len(vendor.batches) == 1  # one upstream batch, not three calls
        usage = until(
            lambda: [r for r in gw.admin("GET", "/admin/usage?group_by=batch").json()["data"] if r["batch"]],
            "usage written",
        )
        assert usage[0]["requests"] == 3 and usage[0]["cost"] > 0


def test_an_openai_batch_relayed_to_the_vendors_files_and_batches(gateway_factory: Any) -> None:
    # The native adapter against the fake OpenAI Batch API: the engine end to end, the real SDK
    # on both sides of the gateway's own Files and Batches.
    with FakeOpenAIBatches(outcomes={"c1": "error"}) as vendor:
        config = {
            "providers": [{"name": "oai", "protocol": "openai", "base_url": vendor.base_url,
                           "api_key": vendor.api_key, "batches": "native"}],
            "models": [{"name": "chat-x", "routes": [{"provider": "oai", "model": "gpt-up"}],
                        "input_per_million": 1.0, "output_per_million": 1.0}],
            "tasks": {"poll_interval": 0.05},
        }  # fmt: skip
        gw = gateway_factory(config)
        client, batch_id, _ = _submit(gw, 3)
        done = until(
            lambda: (b := client.batches.retrieve(batch_id)).status == "completed" and b, "completed", 20
        )
        counts = done.request_counts
        assert counts is not None and (counts.total, counts.completed, counts.failed) == (3, 2, 1)
        assert len(vendor.batches) == 1  # one upstream batch, not three calls
        (upstream,) = vendor.batches
        sent = vendor.input_lines(upstream)
        assert [x["custom_id"] for x in sent] == ["c0", "c1", "c2"]
        assert {x["body"]["model"] for x in sent} == {"gpt-up"} and {x["url"] for x in sent} == {
            "/v1/chat/completions"
        }
        out = {x["custom_id"]: x for x in map(json.loads, content(client, done.output_file_id).splitlines())}
        assert sorted(out) == ["c0", "c2"] and out["c0"]["response"]["status_code"] == 200
        assert out["c0"]["response"]["body"]["object"] == "chat.completion"
        errors = [json.loads(x) for x in content(client, done.error_file_id).splitlines()]
        assert [e["custom_id"] for e in errors] == ["c1"] and errors[0]["response"]["status_code"] == 400
        assert vendor.api_key not in content(client, done.error_file_id).decode()
        usage = until(
            lambda: [r for r in gw.admin("GET", "/admin/usage?group_by=batch").json()["data"] if r["batch"]],
            "usage written",
        )
        row = usage[0]
        assert row["batch"] == batch_id and (row["requests"], row["errors"]) == (3, 1)
        # The two answered lines' tokens as the vendor counted them, at the vendor's half price.
        tokens = row["prompt_tokens"] + row["completion_tokens"]
        assert tokens > 0 and row["cost"] == pytest.approx(tokens / 1e6 * 0.5)


def _openai_native_config(vendor: FakeOpenAIBatches) -> dict[str, Any]:
    return {
        "providers": [{"name": "oai", "protocol": "openai", "base_url": vendor.base_url,
                       "api_key": vendor.api_key, "batches": "native"}],
        "models": [{"name": "chat-x", "routes": [{"provider": "oai", "model": "gpt-up"}],
                    "input_per_million": 1.0, "output_per_million": 1.0}],
        "tasks": {"poll_interval": 0.05},
        "batches": {"lease_seconds": 3},
    }  # fmt: skip


def test_a_submit_whose_id_was_never_stored_is_adopted_by_the_next_worker(gateway_factory: Any) -> None:
    # The vendor creates the batch but its answer never arrives, and the worker stops: as a
    # process dying between the submit and storing the upstream id leaves it. The gateway that
    # takes the batch over finds the vendor's batch by the gateway's batch id in its metadata
    # and follows it: one upstream batch, every line's result written and accounted once.
    with FakeOpenAIBatches(outcomes={"c1": "error"}, lost_answer={"batches"}) as vendor:
        config = _openai_native_config(vendor)
        first = gateway_factory(config)
        record = first.create_key_record()
        client = openai.OpenAI(base_url=first.base_url + "/v1", api_key=record["key"], max_retries=0)
        batch_id = chat_batch(client, 3, "chat-x").id
        until(lambda: vendor.batches, "the vendor's batch created")
        first.stop()
        vendor.lost_answer.clear()
        second = gateway_factory(config)
        client = openai.OpenAI(base_url=second.base_url + "/v1", api_key=record["key"], max_retries=0)
        done = until(
            lambda: (b := client.batches.retrieve(batch_id)).status == "completed" and b, "completed", 30
        )
        assert len(vendor.batches) == 1, "the batch was submitted again"
        (upstream,) = vendor.batches.values()
        assert upstream.metadata == {"unigate_batch_id": batch_id}
        counts = done.request_counts
        assert counts is not None and (counts.total, counts.completed, counts.failed) == (3, 2, 1)
        out = [json.loads(x)["custom_id"] for x in content(client, done.output_file_id).splitlines()]
        errors = [json.loads(x)["custom_id"] for x in content(client, done.error_file_id).splitlines()]
        assert sorted(out) == ["c0", "c2"] and errors == ["c1"]
        usage = until(
            lambda: [
                r for r in second.admin("GET", "/admin/usage?group_by=batch").json()["data"] if r["batch"]
            ],
            "usage written",
        )
        assert [(r["batch"], r["requests"], r["errors"]) for r in usage] == [(batch_id, 3, 1)]
        assert f"adopted oai's batch {upstream.id}" in second.log()
