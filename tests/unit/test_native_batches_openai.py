"""The OpenAI/Azure native batch adapter (providers/openai/batches.py) against the fake Batch API:
the exact upload and create requests, every batch status, result lines of every kind with their
usage, cancel, and upstream failures mapped by the status table with the key never shown."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest

from tests.support.fake_openai_batches import FakeBatch, FakeOpenAIBatches
from tests.support.native_batches import collected, run_native, until_over
from unigate.batches.native import NativeBatches, NativeLine, NativeResult, NativeState
from unigate.config import ProviderConfig
from unigate.errors import UpstreamRejected
from unigate.providers.base import RouteFailed

SECRET = "sk-upstream-batch-secret-0123456789"
T = TypeVar("T")
LINES = [
    NativeLine("a", {"model": "gpt-upstream", "messages": [{"role": "user", "content": "one"}]}),
    NativeLine("b", {"model": "gpt-upstream", "messages": [{"role": "user", "content": "two"}]}),
    NativeLine("c", {"model": "gpt-upstream", "messages": [{"role": "user", "content": "three"}]}),
]
CHAT = "/v1/chat/completions"


@pytest.fixture
def fake() -> Iterator[FakeOpenAIBatches]:
    with FakeOpenAIBatches(api_key=SECRET, run_seconds=0.2) as server:
        yield server


def with_batches(
    tmp_path: Path,
    fake: FakeOpenAIBatches,
    use: Callable[[NativeBatches], Awaitable[T]],
    *,
    protocol: str = "openai",
    base_url: str | None = None,
    api_key: str = SECRET,
    read_timeout: float = 5,
    total_timeout: float = 10,
) -> T:
    config = ProviderConfig(
        name="batchy",
        protocol=protocol,
        base_url=fake.base_url if base_url is None else base_url,
        api_key=api_key,
        batches="native",
        connect_timeout=2,
        read_timeout=read_timeout,
        total_timeout=total_timeout,
    )
    return run_native(tmp_path, config, use)


# -- submit --


@pytest.mark.parametrize("protocol", ["openai", "azure"])
def test_submit_uploads_the_jsonl_and_creates_the_batch(
    tmp_path: Path, fake: FakeOpenAIBatches, protocol: str
) -> None:
    fake.auth_header = "api-key" if protocol == "azure" else "authorization"
    # Azure's base URL may carry an api-version, which goes on every request.
    query = "?api-version=preview" if protocol == "azure" else ""

    async def use(batches: NativeBatches) -> str:
        return await batches.submit(CHAT, LINES, {"unigate_batch": "batch_123"})

    batch_id = with_batches(tmp_path, fake, use, protocol=protocol, base_url=fake.base_url + query)

    upload, create = fake.received
    assert (upload.method, upload.path) == ("POST", f"/v1/files{query}")
    assert upload.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert upload.form["purpose"] == "batch"
    filename, content = upload.form["file"]
    assert filename == "batch.jsonl"
    assert content == b"".join(
        orjson.dumps({"custom_id": line.custom_id, "method": "POST", "url": CHAT, "body": line.body}) + b"\n"
        for line in LINES
    )
    assert (create.method, create.path) == ("POST", f"/v1/batches{query}")
    assert orjson.loads(create.body) == {
        "input_file_id": upload.form["id"],
        "endpoint": CHAT,
        "completion_window": "24h",
        "metadata": {"unigate_batch": "batch_123"},
    }
    assert create.headers["content-type"] == "application/json"
    for request in (upload, create):
        if protocol == "azure":
            assert request.headers["api-key"] == SECRET and "authorization" not in request.headers
        else:
            assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert batch_id in fake.batches
    assert fake.input_lines(batch_id)[1] == {
        "custom_id": "b",
        "method": "POST",
        "url": CHAT,
        "body": LINES[1].body,
    }


def test_a_large_batch_is_uploaded_whole_from_its_spool(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    # ~3 MB of input: past the in-memory spool, so the upload streams from a temporary file.
    lines = [NativeLine(f"line-{n}", {"model": "m", "input": "x" * 1000}) for n in range(3000)]

    async def use(batches: NativeBatches) -> str:
        return await batches.submit("/v1/embeddings", lines, {})

    batch_id = with_batches(tmp_path, fake, use)
    sent = fake.input_lines(batch_id)
    assert len(sent) == 3000
    assert sent[2999] == {
        "custom_id": "line-2999",
        "method": "POST",
        "url": "/v1/embeddings",
        "body": lines[2999].body,
    }


def test_a_file_transfer_may_outlast_the_providers_total_timeout(
    tmp_path: Path, fake: FakeOpenAIBatches
) -> None:
    # total_timeout is chosen for single calls; moving a whole batch is bounded by silence.
    fake.stall = {"files": 1.0}

    async def use(batches: NativeBatches) -> str:
        return await batches.submit(CHAT, LINES, {})

    assert with_batches(tmp_path, fake, use, total_timeout=0.5) in fake.batches


# -- poll --


@pytest.mark.parametrize(
    ("upstream", "expected"),
    [
        ("validating", "running"),
        ("in_progress", "running"),
        ("finalizing", "running"),
        ("cancelling", "running"),
        ("completed", "ended"),
        ("cancelled", "cancelled"),
        ("expired", "expired"),
        ("failed", "failed"),
        ("paused", "running"),  # a state this adapter does not know never ends a batch
    ],
)
def test_poll_maps_every_status(
    tmp_path: Path, fake: FakeOpenAIBatches, upstream: str, expected: str
) -> None:
    async def use(batches: NativeBatches) -> NativeState:
        batch_id = await batches.submit(CHAT, LINES, {})
        fake.status = upstream
        return await batches.poll(batch_id)

    state = with_batches(tmp_path, fake, use)
    assert state.status == expected
    assert state.error == ("Scripted failure." if upstream == "failed" else None)
    assert state.total == 3


def test_poll_follows_the_batch_and_counts_its_requests(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    fake.outcomes = {"b": "error"}

    async def use(batches: NativeBatches) -> tuple[NativeState, NativeState]:
        batch_id = await batches.submit(CHAT, LINES, {})
        return await batches.poll(batch_id), await until_over(batches, batch_id)

    first, last = with_batches(tmp_path, fake, use)
    assert first == NativeState("running", total=3, succeeded=0, errored=0)
    assert last == NativeState("ended", total=3, succeeded=2, errored=1)


# -- results --


def test_results_map_success_error_and_expired_lines(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    fake.outcomes = {"b": "error", "c": "expired"}

    async def use(batches: NativeBatches) -> tuple[NativeState, dict[str, NativeResult]]:
        batch_id = await batches.submit(CHAT, LINES, {})
        state = await until_over(batches, batch_id)
        return state, await collected(batches, batch_id)

    state, results = with_batches(tmp_path, fake, use)
    assert state == NativeState("expired", total=3, succeeded=1, errored=2)
    ok, refused, expired = results["a"], results["b"], results["c"]
    assert (ok.kind, ok.status_code, ok.error) == ("succeeded", 200, None)
    assert ok.body is not None and ok.body["choices"][0]["message"]["content"] == "Answer 0"
    assert ok.body["model"] == "gpt-upstream"
    assert ok.usage == {"prompt_tokens": 10, "completion_tokens": 5}
    assert (refused.kind, refused.status_code) == ("errored", 400)
    assert refused.error == {"code": "invalid_value", "message": "Invalid value for 'temperature'."}
    assert refused.body is not None and refused.body["error"]["type"] == "invalid_request_error"
    assert (expired.kind, expired.status_code, expired.body) == ("expired", 0, None)
    assert expired.error is not None and expired.error["code"] == "batch_expired"
    assert expired.usage == {"prompt_tokens": 0, "completion_tokens": 0}
    downloads = [r.path for r in fake.received if r.path.endswith("/content")]
    assert len(downloads) == 2, "the output file, then the error file"


@pytest.mark.parametrize(
    ("endpoint", "usage"),
    [
        ("/v1/embeddings", {"prompt_tokens": 11, "completion_tokens": 0}),
        ("/v1/responses", {"prompt_tokens": 11, "completion_tokens": 5}),
        ("/v1/completions", {"prompt_tokens": 11, "completion_tokens": 5}),
    ],
)
def test_usage_is_read_in_each_endpoints_words(
    tmp_path: Path, fake: FakeOpenAIBatches, endpoint: str, usage: dict[str, int]
) -> None:
    async def use(batches: NativeBatches) -> dict[str, NativeResult]:
        batch_id = await batches.submit(endpoint, LINES, {})
        await until_over(batches, batch_id)
        return await collected(batches, batch_id)

    results = with_batches(tmp_path, fake, use)
    assert results["b"].usage == usage
    assert {r.kind for r in results.values()} == {"succeeded"}


def test_cancel(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    fake.run_seconds = 30

    async def use(batches: NativeBatches) -> tuple[str, list[NativeState], dict[str, NativeResult]]:
        batch_id = await batches.submit(CHAT, LINES, {})
        await batches.cancel(batch_id)
        states = [await batches.poll(batch_id), await batches.poll(batch_id)]
        return batch_id, states, await collected(batches, batch_id)

    batch_id, states, results = with_batches(tmp_path, fake, use)
    cancel = [r for r in fake.received if r.path.endswith("/cancel")]
    assert [(r.method, r.path) for r in cancel] == [("POST", f"/v1/batches/{batch_id}/cancel")]
    assert [s.status for s in states] == ["running", "cancelled"]  # cancelling, then cancelled
    assert {r.kind for r in results.values()} == {"canceled"}
    assert results["a"].error is not None and results["a"].error["code"] == "batch_cancelled"


def test_cancelling_a_batch_that_has_ended_is_no_error(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    async def use(batches: NativeBatches) -> NativeState:
        batch_id = await batches.submit(CHAT, LINES, {})
        await until_over(batches, batch_id)
        await batches.cancel(batch_id)  # refused upstream: the batch is already over
        return await batches.poll(batch_id)

    assert with_batches(tmp_path, fake, use).status == "ended"
    assert [r.method for r in fake.received if r.path.endswith("/cancel")] == ["POST"]


# -- failures --


def _failure(tmp_path: Path, fake: FakeOpenAIBatches, **settings: Any) -> RouteFailed | UpstreamRejected:
    async def use(batches: NativeBatches) -> str:
        return await batches.submit(CHAT, LINES, {})

    with pytest.raises((RouteFailed, UpstreamRejected)) as caught:
        with_batches(tmp_path, fake, use, **settings)
    error = caught.value
    assert isinstance(error, RouteFailed | UpstreamRejected)
    return error


@pytest.mark.parametrize(("protocol", "vendor"), [("openai", "OpenAI"), ("azure", "Azure OpenAI")])
def test_a_refused_key_names_the_credentials_never_the_key(
    tmp_path: Path, fake: FakeOpenAIBatches, caplog: pytest.LogCaptureFixture, protocol: str, vendor: str
) -> None:
    with caplog.at_level(logging.DEBUG):
        error = _failure(tmp_path, fake, api_key="sk-wrong-key-9876543210", protocol=protocol)
    assert isinstance(error, RouteFailed)
    assert f"The {vendor} upstream refused the gateway's credentials (HTTP 401 at /v1/files)" in error.message
    assert "sk-wrong-key" not in str(error) and "sk-wrong-key" not in caplog.text


def test_a_base_url_without_v1_is_named(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    error = _failure(tmp_path, fake, base_url=fake.base_url.removesuffix("/v1"))
    assert isinstance(error, RouteFailed)
    assert "HTTP 404 at /files" in error.message and "base_url" in error.message


def test_a_failed_create_is_a_route_failure_and_drops_the_uploaded_file(
    tmp_path: Path, fake: FakeOpenAIBatches, caplog: pytest.LogCaptureFixture
) -> None:
    fake.fail = {"batches": 500}
    with caplog.at_level(logging.DEBUG):
        error = _failure(tmp_path, fake)
    assert isinstance(error, RouteFailed)
    assert "The OpenAI upstream failed (HTTP 500 at /v1/batches)" in error.message
    assert fake.files == {}, "the input file nothing refers to was deleted"
    assert [r.method for r in fake.received] == ["POST", "POST", "DELETE"]
    assert SECRET not in caplog.text and SECRET not in str(error)


def test_a_refused_batch_relays_the_upstreams_reason(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    async def use(batches: NativeBatches) -> str:
        return await batches.submit("/v1/images/generations", LINES, {})

    with pytest.raises(UpstreamRejected) as caught:
        with_batches(tmp_path, fake, use)
    assert caught.value.status == 400
    assert "endpoint: must be one of" in caught.value.message
    assert fake.files == {}, "the refused batch's input file was deleted"


def test_an_unanswered_create_keeps_the_input_file(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    # The batch may exist upstream, reading that file: it is not deleted from under it.
    fake.stall = {"batches": 1.5}
    error = _failure(tmp_path, fake, read_timeout=0.5)
    assert isinstance(error, RouteFailed) and error.status == 504
    assert [purpose for purpose, _, _ in fake.files.values()] == ["batch"]
    assert "DELETE" not in [r.method for r in fake.received]


def test_results_before_the_end_say_so(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    fake.run_seconds = 30

    async def use(batches: NativeBatches) -> dict[str, NativeResult]:
        return await collected(batches, await batches.submit(CHAT, LINES, {}))

    with pytest.raises(RouteFailed, match=r"has no results yet \(it is (validating|in_progress)\)"):
        with_batches(tmp_path, fake, use)


def test_error_lines_quoting_the_key_are_scrubbed(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    fake.outcomes = {"a": "error_quoting_key"}

    async def use(batches: NativeBatches) -> dict[str, NativeResult]:
        batch_id = await batches.submit(CHAT, LINES, {})
        await until_over(batches, batch_id)
        return await collected(batches, batch_id)

    leaked = with_batches(tmp_path, fake, use)["a"]
    assert leaked.kind == "errored" and leaked.error is not None
    assert leaked.error["message"].startswith("Header Authorization: Bearer ")
    assert SECRET not in orjson.dumps([leaked.error, leaked.body]).decode()


@pytest.mark.parametrize(
    ("route", "status"), [("retrieve", 500), ("retrieve", 401), ("content", 500), ("cancel", 503)]
)
def test_failures_after_submit_are_mapped(
    tmp_path: Path, fake: FakeOpenAIBatches, route: str, status: int
) -> None:
    async def use(batches: NativeBatches) -> None:
        batch_id = await batches.submit(CHAT, LINES, {})
        await until_over(batches, batch_id)
        fake.fail = {route: status}
        if route == "cancel":
            await batches.cancel(batch_id)
        else:
            await collected(batches, batch_id)

    with pytest.raises(RouteFailed) as caught:
        with_batches(tmp_path, fake, use)
    assert f"HTTP {status}" in caught.value.message
    assert caught.value.status == (503 if status == 503 else 502)
    assert SECRET not in caught.value.message


# -- find: the batch of a submit whose id was never stored --


def _seed(
    fake: FakeOpenAIBatches, n: int, created: float, metadata: dict[str, str] | None = None
) -> list[str]:
    """`n` batches created at `created`, as other clients of the account would have left them."""
    ids = []
    for i in range(n):
        batch = FakeBatch(f"batch_other_{created:.0f}_{i}", CHAT, "file-x", metadata or {}, [], created)
        fake.batches[batch.id] = batch
        ids.append(batch.id)
    return ids


def test_find_pages_through_the_list_to_the_batch_with_the_metadata(
    tmp_path: Path, fake: FakeOpenAIBatches
) -> None:
    since = time.time()
    wanted = {"unigate_batch_id": "batch_abc"}

    async def use(batches: NativeBatches) -> tuple[str | None, str | None]:
        mine = await batches.submit(CHAT, LINES, wanted)
        # 150 batches created after it: it is on the second page of 100.
        _seed(fake, 150, time.time(), {"unigate_batch_id": "batch_someone_else"})
        return mine, await batches.find(wanted, since)

    mine, found = with_batches(tmp_path, fake, use)
    assert found == mine
    lists = [r.path for r in fake.received if r.method == "GET" and r.path.startswith("/v1/batches")]
    assert len(lists) == 2 and lists[0] == "/v1/batches?limit=100"
    assert lists[1].startswith("/v1/batches?limit=100&after=batch_other_")


def test_find_stops_at_batches_older_than_the_submit(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    # A day-old batch with the same metadata (a gateway restored from an old backup, say) is
    # not this submit's; and the listing stops at the first page reaching back before it.
    _seed(fake, 1, time.time() - 86400, {"unigate_batch_id": "batch_abc"})
    _seed(fake, 150, time.time() - 7200)
    _seed(fake, 3, time.time())

    async def use(batches: NativeBatches) -> str | None:
        return await batches.find({"unigate_batch_id": "batch_abc"}, time.time() - 60)

    assert with_batches(tmp_path, fake, use) is None
    assert [r.path for r in fake.received] == ["/v1/batches?limit=100"]


def test_find_without_a_match_reads_to_the_end(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    _seed(fake, 120, time.time(), {"unigate_batch_id": "batch_other"})

    async def use(batches: NativeBatches) -> str | None:
        return await batches.find({"unigate_batch_id": "batch_abc"}, time.time() - 60)

    assert with_batches(tmp_path, fake, use) is None
    assert len(fake.received) == 2


def test_a_failed_lookup_is_an_error_not_a_miss(tmp_path: Path, fake: FakeOpenAIBatches) -> None:
    # "Not found" would have the batch submitted again: a lookup that failed must say so.
    fake.fail = {"list": 503}

    async def use(batches: NativeBatches) -> str | None:
        return await batches.find({"unigate_batch_id": "batch_abc"}, time.time())

    with pytest.raises(RouteFailed):
        with_batches(tmp_path, fake, use)
