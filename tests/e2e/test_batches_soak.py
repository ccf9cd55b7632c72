"""A 10,000-line sandbox batch: exact request counts, one result per line, every line accounted
once under the batch's id, and its wall time printed (marked soak: it runs for seconds)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.support.served import ServedGateway
from tests.support.waits import until

pytestmark = pytest.mark.soak

LINES = 10_000


def test_ten_thousand_line_batch_has_exact_counts_and_one_result_per_line(tmp_path: Path) -> None:
    with ServedGateway(tmp_path) as gw:
        client = anthropic.Anthropic(
            base_url=gw.base_url, api_key=gw.create_key(), max_retries=0, timeout=120
        )
        requests: list[Any] = [
            {"custom_id": f"line-{i}", "params": {"model": "sandbox-chat", "max_tokens": 16,
                                                  "messages": [{"role": "user", "content": f"number {i}"}]}}
            for i in range(LINES)
        ]  # fmt: skip
        started = time.monotonic()
        batch = client.messages.batches.create(requests=requests)
        ended = until(
            lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b,
            "the batch ended",
            120,
            0.2,
        )
        print(f"{LINES} sandbox lines in {time.monotonic() - started:.1f} s")
        counts = ended.request_counts
        assert (counts.succeeded, counts.errored, counts.canceled, counts.expired) == (LINES, 0, 0, 0)
        results = list(client.messages.batches.results(batch.id))
        assert [r.custom_id for r in results] == [f"line-{i}" for i in range(LINES)]
        for i, r in enumerate(results):
            assert r.result.type == "succeeded"
            assert f"number {i}" in r.result.message.content[0].text  # type: ignore[union-attr]
        usage = until(
            lambda: [r for r in gw.admin("GET", "/admin/usage?group_by=batch").json()["data"] if r["batch"]],
            "usage written",
        )
        assert usage[0]["batch"] == batch.id and usage[0]["requests"] == LINES
