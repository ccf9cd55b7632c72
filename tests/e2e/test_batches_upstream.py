"""Batches against a chat-only fake OpenAI upstream on 127.0.0.1: 429s and 500s retried until
the line succeeds, a cancel that stops new lines at once, and a budget no batch overruns
(its lines past the budget errored with 429 `insufficient_quota`, the batch still completes)."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.support.batch_files import chat_batch, content
from tests.support.fake_openai import FakeOpenAI
from tests.support.flaky_openai import FlakyOpenAI
from tests.support.waits import until
from unigate.batches.store import BatchStore, NewLine
from unigate.store import db


def _config(fake: FakeOpenAI, **batches: Any) -> dict[str, Any]:
    return {
        # pragma: allowlist nextline secret
        "providers": [{"name": "fake", "protocol": "openai", "base_url": fake.base_url, "api_key": "sk-up"}],
        "models": [
            {"name": "fake-chat", "routes": [{"provider": "fake", "model": "gpt-x"}], "price_per_call": 0.01,
             "batch_discount": 0.5},
        ],
        "routing": {"cooldown_after_failures": 1000},
        "batches": {"retry_seconds": 0.02, **batches},
    }  # fmt: skip


def _requests(n: int) -> list[Any]:
    return [
        {"custom_id": f"r{i}", "params": {"model": "fake-chat", "max_tokens": 8,
                                          "messages": [{"role": "user", "content": f"question {i}"}]}}
        for i in range(n)
    ]  # fmt: skip


@pytest.fixture
def flaky() -> Iterator[FlakyOpenAI]:
    with FlakyOpenAI() as fake:
        yield fake


def test_429s_and_500s_are_retried_until_every_line_succeeds(
    flaky: FlakyOpenAI, gateway_factory: Any
) -> None:
    gw = gateway_factory(_config(flaky))
    client = anthropic.Anthropic(base_url=gw.base_url, api_key=gw.create_key(), max_retries=0)
    batch = client.messages.batches.create(requests=_requests(20))
    ended = until(
        lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b,
        "batch ended",
        30,
    )
    assert ended.request_counts.succeeded == 20 and ended.request_counts.errored == 0
    results = list(client.messages.batches.results(batch.id))
    assert {r.result.type for r in results} == {"succeeded"}
    assert sorted(flaky.seen.values()) == [3] * 20  # a 429, a 500, then the answer: nothing more
    assert "retrying in" in gw.log()


def test_a_line_past_max_attempts_is_errored_with_the_upstreams_answer(gateway_factory: Any) -> None:
    with FlakyOpenAI(mode="fail500", flaky=False) as down:
        gw = gateway_factory(_config(down, max_attempts=3))
        client = anthropic.Anthropic(base_url=gw.base_url, api_key=gw.create_key(), max_retries=0)
        batch = client.messages.batches.create(requests=_requests(2))
        until(lambda: client.messages.batches.retrieve(batch.id).processing_status == "ended", "ended", 30)
        results = list(client.messages.batches.results(batch.id))
        assert [r.result.type for r in results] == ["errored", "errored"]
        assert results[0].result.error.error.type == "api_error"  # type: ignore[union-attr]
        assert sorted(down.seen.values()) == [3, 3]


def test_cancel_stops_new_lines_at_once_and_keeps_partial_results(gateway_factory: Any) -> None:
    with FlakyOpenAI(flaky=False, delay=0.1) as slow:
        gw = gateway_factory(_config(slow, concurrency=2))
        client = anthropic.Anthropic(base_url=gw.base_url, api_key=gw.create_key(), max_retries=0)
        batch = client.messages.batches.create(requests=_requests(200))
        until(
            lambda: client.messages.batches.retrieve(batch.id).request_counts.succeeded >= 4, "some done", 20
        )
        with pytest.raises(anthropic.BadRequestError):
            client.messages.batches.delete(batch.id)  # still running
        canceling = client.messages.batches.cancel(batch.id)
        assert canceling.processing_status in ("canceling", "ended")
        assert canceling.cancel_initiated_at is not None
        ended = until(
            lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b,
            "cancelled batch ended",
        )
        counts = ended.request_counts
        assert counts.canceled >= 150 and counts.succeeded >= 4 and counts.errored == 0
        assert counts.succeeded + counts.canceled == 200
        sent = len(slow.received)
        assert sent == counts.succeeded  # the canceled lines never reached the upstream
        kinds = Counter(r.result.type for r in client.messages.batches.results(batch.id))
        assert kinds == {"succeeded": counts.succeeded, "canceled": counts.canceled}


def test_a_batch_never_overruns_the_keys_budget(gateway_factory: Any) -> None:
    with FlakyOpenAI(flaky=False) as fake:
        gw = gateway_factory(_config(fake))
        record = gw.create_key_record(budget=0.05)
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=record["key"], max_retries=0)
        batch = chat_batch(client, 40, "fake-chat")
        done = until(
            lambda: (b := client.batches.retrieve(batch.id)).status == "completed" and b, "completed", 30
        )
        assert done.request_counts is not None
        ok, failed = done.request_counts.completed, done.request_counts.failed
        assert ok + failed == 40 and failed > 0
        # Each line costs half its price (the model's batch_discount), so at most 10 fit in 0.05.
        assert 5 <= ok <= 10 and len(fake.received) == ok
        errors = [json.loads(x) for x in content(client, done.error_file_id).splitlines()]
        assert len(errors) == failed
        for line in errors:
            assert line["response"]["status_code"] == 429
            assert line["response"]["body"]["error"]["code"] == "insufficient_quota"
        usage = until(
            lambda: [r for r in gw.admin("GET", "/admin/usage?group_by=batch").json()["data"] if r["batch"]],
            "usage written",
        )
        spent = sum(r["cost"] for r in usage)
        assert spent <= 0.05 + 1e-9
        assert spent == pytest.approx(0.005 * ok)


def test_a_batch_past_its_window_ends_expired_with_its_pending_lines(
    flaky: FlakyOpenAI, gateway_factory: Any
) -> None:
    gw = gateway_factory(_config(flaky, lease_seconds=3))
    record = gw.create_key_record()

    async def stale() -> None:
        # A batch whose worker died a day ago: its lease lapsed, its window is over.
        engine = db.create_engine(gw.settings.database_url)
        lines = [NewLine(f"r{i}", body["params"]) for i, body in enumerate(_requests(3))]
        store = BatchStore(engine)
        gone = time.time() - 1
        await store.create("msgbatch_stale", record["id"], "anthropic", "/v1/messages", status="in_progress",
                           lines=lines, expires_at=gone)  # fmt: skip
        await engine.dispose()

    asyncio.run(stale())
    client = anthropic.Anthropic(base_url=gw.base_url, api_key=record["key"], max_retries=0)
    ended = until(
        lambda: (b := client.messages.batches.retrieve("msgbatch_stale")).processing_status == "ended" and b,
        "the stale batch ended",
    )
    assert ended.request_counts.expired == 3 and ended.request_counts.succeeded == 0
    assert [r.result.type for r in client.messages.batches.results("msgbatch_stale")] == ["expired"] * 3
    assert flaky.received == []


def test_revoking_the_key_cancels_its_running_batch(gateway_factory: Any) -> None:
    with FlakyOpenAI(flaky=False, delay=0.1) as slow:
        gw = gateway_factory(_config(slow, concurrency=2))
        record = gw.create_key_record()
        client = anthropic.Anthropic(base_url=gw.base_url, api_key=record["key"], max_retries=0)
        batch = client.messages.batches.create(requests=_requests(200))  # 10 s at 20 lines a second
        until(lambda: client.messages.batches.retrieve(batch.id).request_counts.succeeded >= 2, "some done")
        assert gw.admin("DELETE", f"/admin/keys/{record['id']}").status == 200

        async def load() -> Any:
            engine = db.create_engine(gw.settings.database_url)
            try:
                return await BatchStore(engine).get(record["id"], batch.id, "anthropic")
            finally:
                await engine.dispose()

        row = until(lambda: (r := asyncio.run(load())).status == "cancelled" and r, "the batch cancelled")
        assert row.canceled >= 100 and row.succeeded + row.canceled == 200
        assert len(slow.received) == row.succeeded  # no line ran for the revoked key
