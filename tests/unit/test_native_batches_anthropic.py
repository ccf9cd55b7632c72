"""The Anthropic native batch adapter (providers/anthropic/batches.py) against the fake Message
Batches API: the exact create request and headers, processing statuses and counts, result lines
of every kind with their usage, cancel, a results_url on another host, and upstream failures
mapped by the status table with the key never shown."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import orjson
import pytest

from tests.support.fake_anthropic_batches import FakeAnthropicBatches
from tests.support.native_batches import collected, run_native, until_over
from unigate.batches.native import NativeBatches, NativeLine, NativeResult, NativeState
from unigate.config import ProviderConfig
from unigate.providers.base import RouteFailed, Unsupported

SECRET = "sk-ant-upstream-batch-secret-0123456789"
T = TypeVar("T")
MESSAGES = "/v1/messages"


def _line(custom_id: str, text: str) -> NativeLine:
    body = {"model": "claude-upstream", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}
    return NativeLine(custom_id, body)


LINES = [_line("a", "one"), _line("b", "two"), _line("c", "three"), _line("d", "four")]


@pytest.fixture
def fake() -> Iterator[FakeAnthropicBatches]:
    with FakeAnthropicBatches(api_key=SECRET, run_seconds=0.2) as server:
        yield server


def with_batches(
    tmp_path: Path,
    fake: FakeAnthropicBatches,
    use: Callable[[NativeBatches], Awaitable[T]],
    *,
    base_url: str | None = None,
    api_key: str = SECRET,
) -> T:
    config = ProviderConfig(
        name="claude-batches",
        protocol="anthropic",
        base_url=fake.base_url if base_url is None else base_url,
        api_key=api_key,
        batches="native",
        connect_timeout=2,
        read_timeout=5,
        total_timeout=10,
    )
    return run_native(tmp_path, config, use)


def test_submit_sends_the_requests_inline_with_anthropics_headers(
    tmp_path: Path, fake: FakeAnthropicBatches
) -> None:
    async def use(batches: NativeBatches) -> str:
        return await batches.submit(MESSAGES, LINES, {"unigate_batch": "batch_1"})

    batch_id = with_batches(tmp_path, fake, use)
    (create,) = fake.received
    assert (create.method, create.path) == ("POST", "/v1/messages/batches")
    expected = {"requests": [{"custom_id": line.custom_id, "params": line.body} for line in LINES]}
    assert create.body == orjson.dumps(expected)
    assert create.headers["x-api-key"] == SECRET
    assert create.headers["anthropic-version"] == "2023-06-01"
    assert create.headers["content-type"] == "application/json"
    assert "authorization" not in create.headers
    assert batch_id in fake.batches


def test_submit_refuses_another_endpoint(tmp_path: Path, fake: FakeAnthropicBatches) -> None:
    async def use(batches: NativeBatches) -> str:
        return await batches.submit("/v1/chat/completions", LINES, {})

    with pytest.raises(Unsupported, match=r"/v1/messages requests only, not /v1/chat/completions"):
        with_batches(tmp_path, fake, use)
    assert fake.received == []


def test_results_map_every_kind_of_line(tmp_path: Path, fake: FakeAnthropicBatches) -> None:
    fake.outcomes = {"b": "error", "c": "expired", "d": "canceled"}

    async def use(batches: NativeBatches) -> tuple[NativeState, NativeState, dict[str, NativeResult]]:
        batch_id = await batches.submit(MESSAGES, LINES, {})
        first = await batches.poll(batch_id)
        return first, await until_over(batches, batch_id), await collected(batches, batch_id)

    first, last, results = with_batches(tmp_path, fake, use)
    assert first == NativeState("running", total=4, succeeded=0, errored=0)
    assert last == NativeState("ended", total=4, succeeded=1, errored=3)
    ok, refused, expired, canceled = (results[k] for k in "abcd")
    assert (ok.kind, ok.status_code, ok.error) == ("succeeded", 200, None)
    assert ok.body is not None and ok.body["type"] == "message" and ok.body["model"] == "claude-upstream"
    assert ok.usage == {"prompt_tokens": 20, "completion_tokens": 7}
    assert (refused.kind, refused.status_code) == ("errored", 400)
    assert refused.error == {"type": "invalid_request_error", "message": "max_tokens: must be at most 8192"}
    assert refused.body == {"type": "error", "error": refused.error}
    assert (expired.kind, expired.status_code, expired.body) == ("expired", 0, None)
    assert (canceled.kind, canceled.status_code, canceled.body) == ("canceled", 0, None)
    assert expired.usage == canceled.usage == {"prompt_tokens": 0, "completion_tokens": 0}
    download = fake.received[-1]
    assert download.path.endswith("/results") and download.headers["x-api-key"] == SECRET


def test_errored_lines_are_scrubbed_and_answers_left_as_they_are(
    tmp_path: Path, fake: FakeAnthropicBatches
) -> None:
    fake.outcomes = {"b": "error_quoting_key"}
    fake.text = "Send it as Authorization: Bearer abcdefghijklmnop"  # credential-like, not a secret

    async def use(batches: NativeBatches) -> dict[str, NativeResult]:
        batch_id = await batches.submit(MESSAGES, LINES, {})
        await until_over(batches, batch_id)
        return await collected(batches, batch_id)

    results = with_batches(tmp_path, fake, use)
    leaked = results["b"]
    assert leaked.error is not None and leaked.error["message"].startswith("x-api-key ")
    assert SECRET not in orjson.dumps([leaked.error, leaked.body]).decode()
    answer = results["a"].body
    assert answer is not None and answer["content"][0]["text"] == f"{fake.text} 0"


def test_cancel(tmp_path: Path, fake: FakeAnthropicBatches) -> None:
    fake.run_seconds = 30

    async def use(batches: NativeBatches) -> tuple[str, list[NativeState], dict[str, NativeResult]]:
        batch_id = await batches.submit(MESSAGES, LINES, {})
        await batches.cancel(batch_id)
        states = [await batches.poll(batch_id), await batches.poll(batch_id)]
        return batch_id, states, await collected(batches, batch_id)

    batch_id, states, results = with_batches(tmp_path, fake, use)
    assert [(r.method, r.path) for r in fake.received if r.path.endswith("/cancel")] == [
        ("POST", f"/v1/messages/batches/{batch_id}/cancel")
    ]
    assert states == [
        NativeState("running", total=4, succeeded=0, errored=0),  # canceling
        NativeState("cancelled", total=4, succeeded=0, errored=4),
    ]
    assert {r.kind for r in results.values()} == {"canceled"}


def test_cancelling_a_batch_that_has_ended_is_no_error(tmp_path: Path, fake: FakeAnthropicBatches) -> None:
    async def use(batches: NativeBatches) -> NativeState:
        batch_id = await batches.submit(MESSAGES, LINES, {})
        await until_over(batches, batch_id)
        await batches.cancel(batch_id)  # refused upstream: the batch is already over
        return await batches.poll(batch_id)

    assert with_batches(tmp_path, fake, use).status == "ended"


def test_results_url_on_another_host_is_not_followed(tmp_path: Path, fake: FakeAnthropicBatches) -> None:
    # Nothing listens there: following it would fail (and would send the key to that host).
    fake.results_host = "http://127.0.0.1:9"

    async def use(batches: NativeBatches) -> tuple[str, dict[str, NativeResult]]:
        batch_id = await batches.submit(MESSAGES, LINES, {})
        await until_over(batches, batch_id)
        return batch_id, await collected(batches, batch_id)

    batch_id, results = with_batches(tmp_path, fake, use)
    assert len(results) == 4
    assert fake.received[-1].path == f"/v1/messages/batches/{batch_id}/results"


def test_results_before_the_end_say_so(tmp_path: Path, fake: FakeAnthropicBatches) -> None:
    fake.run_seconds = 30

    async def use(batches: NativeBatches) -> dict[str, NativeResult]:
        return await collected(batches, await batches.submit(MESSAGES, LINES, {}))

    with pytest.raises(RouteFailed, match=r"has no results yet \(it is in_progress\)"):
        with_batches(tmp_path, fake, use)


def test_a_refused_key_names_the_credentials_never_the_key(
    tmp_path: Path, fake: FakeAnthropicBatches, caplog: pytest.LogCaptureFixture
) -> None:
    async def use(batches: NativeBatches) -> str:
        return await batches.submit(MESSAGES, LINES, {})

    with caplog.at_level(logging.DEBUG), pytest.raises(RouteFailed) as caught:
        with_batches(tmp_path, fake, use, api_key="sk-ant-wrong-key-9876543210")
    assert "The Anthropic upstream refused the gateway's credentials (HTTP 401" in caught.value.message
    assert "sk-ant-wrong" not in str(caught.value) and "sk-ant-wrong" not in caplog.text


def test_a_wrong_base_url_is_named(tmp_path: Path, fake: FakeAnthropicBatches) -> None:
    async def use(batches: NativeBatches) -> str:
        return await batches.submit(MESSAGES, LINES, {})

    with pytest.raises(RouteFailed) as caught:
        with_batches(tmp_path, fake, use, base_url=fake.base_url + "/anthropic")
    assert "HTTP 404 at /anthropic/v1/messages/batches" in caught.value.message
    assert "base_url" in caught.value.message


@pytest.mark.parametrize(
    ("route", "status"), [("create", 500), ("retrieve", 529), ("results", 500), ("cancel", 429)]
)
def test_upstream_failures_are_route_failures(
    tmp_path: Path, fake: FakeAnthropicBatches, route: str, status: int
) -> None:
    async def use(batches: NativeBatches) -> None:
        if route == "create":
            fake.fail = {route: status}
        batch_id = await batches.submit(MESSAGES, LINES, {})
        await until_over(batches, batch_id)
        fake.fail = {route: status}
        if route == "cancel":
            await batches.cancel(batch_id)
        elif route == "results":
            await collected(batches, batch_id)
        else:
            await batches.poll(batch_id)

    with pytest.raises(RouteFailed) as caught:
        with_batches(tmp_path, fake, use)
    assert f"(HTTP {status} at /v1/messages/batches" in caught.value.message
    assert caught.value.status == (429 if status == 429 else 502)
    assert SECRET not in caught.value.message


def test_find_finds_nothing_and_asks_nothing(tmp_path: Path, fake: FakeAnthropicBatches) -> None:
    # A MessageBatch keeps no metadata: nothing tells this gateway's batch from another's, so
    # nothing is adopted (the batch is submitted again after a take-over: at least once).
    async def use(batches: NativeBatches) -> str | None:
        await batches.submit(MESSAGES, LINES, {"unigate_batch_id": "batch_1"})
        return await batches.find({"unigate_batch_id": "batch_1"}, 0.0)

    assert with_batches(tmp_path, fake, use) is None
    assert [r.method for r in fake.received] == ["POST"]
