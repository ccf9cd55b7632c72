"""A batch survives its process: kill -9 of the `unigate serve` running it, and another
process sharing the database takes the batch up once its lease lapses and runs only the lines
not done; every line ends with exactly one result. Lines whose call had ended but whose result
was not committed when the process died are the only ones the upstream may see twice. A batch
relayed to OpenAI's batch API whose process died after the vendor created the batch but before
its id was stored is adopted by the next process, not submitted again."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.support.batch_files import chat_batch
from tests.support.fake_openai_batches import FakeOpenAIBatches
from tests.support.flaky_openai import FlakyOpenAI
from tests.support.gateway import SHARED_DATABASE, on_shared_database
from tests.support.waits import until
from unigate.batches.runner import FLUSH_SECONDS

pytestmark = pytest.mark.process

LINES = 300
CONCURRENCY = 8
DELAY = 0.03  # the upstream's time per answer
# At most what finished within one commit group's window, plus what was in flight, may run twice.
REPEATABLE = int(FLUSH_SECONDS * CONCURRENCY / DELAY) + 2 * CONCURRENCY


def test_kill_9_mid_batch_another_process_completes_it_with_no_duplicate_line(tmp_path: Path) -> None:
    with FlakyOpenAI(flaky=False, delay=DELAY) as fake:
        config = {
            # pragma: allowlist nextline secret
            "providers": [{"name": "fake", "protocol": "openai", "base_url": fake.base_url, "api_key": "sk"}],
            "models": [{"name": "fake-chat", "routes": [{"provider": "fake", "model": "gpt-x"}]}],
            "batches": {"lease_seconds": 3, "concurrency": CONCURRENCY},
        }
        db = tmp_path / SHARED_DATABASE
        requests: list[Any] = [
            {"custom_id": f"r{i}", "params": {"model": "fake-chat", "max_tokens": 8,
                                              "messages": [{"role": "user", "content": f"line {i}"}]}}
            for i in range(LINES)
        ]  # fmt: skip
        first = on_shared_database(tmp_path, "a", config).start()
        try:
            key = first.create_key()
            client = anthropic.Anthropic(base_url=first.base_url, api_key=key, max_retries=0)
            batch = client.messages.batches.create(requests=requests)
            until(
                lambda: client.messages.batches.retrieve(batch.id).request_counts.succeeded >= 60,
                "60 done",
                30,
            )
        finally:
            first.kill()
        done_at_kill = _states(db, batch.id).count("succeeded")
        assert done_at_kill < LINES, "the batch ended before the kill: make the upstream slower"
        with on_shared_database(tmp_path, "b", config) as second:
            client = anthropic.Anthropic(base_url=second.base_url, api_key=key, max_retries=0)
            ended = until(
                lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b,
                "the batch ended on the second process",
                60,
            )
            assert "taken up" in second.log()
            counts = ended.request_counts
            assert (counts.succeeded, counts.errored, counts.canceled, counts.processing) == (LINES, 0, 0, 0)
            results = list(client.messages.batches.results(batch.id))
        assert sorted(r.custom_id for r in results) == sorted(f"r{i}" for i in range(LINES))
        assert {r.result.type for r in results} == {"succeeded"}
        # Every line reached the upstream; only lines in flight or awaiting their commit at the
        # kill may have reached it twice.
        sends = sorted(fake.seen.values())
        assert len(sends) == LINES and sends[-1] <= 2
        repeated = sum(n - 1 for n in sends)
        print(f"{done_at_kill} lines committed at the kill, {repeated} sent twice")
        assert repeated <= REPEATABLE


def test_kill_9_mid_native_submit_the_next_process_adopts_the_vendors_batch(tmp_path: Path) -> None:
    # The vendor holds its answer to the create: the first process dies with the batch created
    # upstream and its id never stored.
    with FakeOpenAIBatches(outcomes={"c1": "error"}, hold={"batches": 60.0}) as vendor:
        config = {
            "providers": [{"name": "oai", "protocol": "openai", "base_url": vendor.base_url,
                           "api_key": vendor.api_key, "batches": "native"}],
            "models": [{"name": "chat-x", "routes": [{"provider": "oai", "model": "gpt-up"}]}],
            "tasks": {"poll_interval": 0.05},
            "batches": {"lease_seconds": 3},
        }  # fmt: skip
        first = on_shared_database(tmp_path, "a", config).start()
        try:
            key = first.create_key()
            client = openai.OpenAI(base_url=first.base_url + "/v1", api_key=key, max_retries=0)
            batch_id = chat_batch(client, 3, "chat-x").id
            until(lambda: vendor.batches, "the vendor's batch created", 30)
        finally:
            first.kill()
        vendor.hold.clear()
        with on_shared_database(tmp_path, "b", config) as second:
            client = openai.OpenAI(base_url=second.base_url + "/v1", api_key=key, max_retries=0)
            done = until(
                lambda: (b := client.batches.retrieve(batch_id)).status == "completed" and b, "completed", 60
            )
            assert len(vendor.batches) == 1, "the batch was submitted again"
            (upstream,) = vendor.batches
            assert f"adopted oai's batch {upstream}" in second.log()
        counts = done.request_counts
        assert counts is not None and (counts.total, counts.completed, counts.failed) == (3, 2, 1)


def _states(db: Path, batch_id: str) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT state FROM batch_lines WHERE batch_id = ?", (batch_id,)).fetchall()
    finally:
        conn.close()
    return [r[0] for r in rows]
