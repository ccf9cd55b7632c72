"""Background responses against the real server, billed and stored exactly: a run cancelled or
deleted mid-stream is recorded like a client that left (499 with the tokens it produced) and
settles its key's budget, so cancelling cannot get output for free; a cancel that races the
run's end gives one answer (a cancelled response has no `response.completed` in its stream);
a live background stream always ends with its terminal event; deleted runs leave no event
rows; a continuation is bounded in bytes and tokens; a key's stored bytes have a quota."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_responses import FakeOpenAIResponses
from tests.support.gateway import GatewayProcess

pytestmark = pytest.mark.process

WORDS = " ".join(f"word{i}" for i in range(40))
IN, OUT = 100_000.0, 1_000_000.0  # per million tokens: 0.1 per prompt token, 1 per output token


@dataclass
class Setup:
    gw: GatewayProcess
    slow: FakeOpenAI
    native: FakeOpenAIResponses


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with (
        FakeOpenAI(mode="slow_stream", slow_seconds=0.1, reply_text=WORDS) as slow,
        FakeOpenAIResponses(reply_text=WORDS, event_delay=0.1) as native,
    ):
        prices = {"input_per_million": IN, "output_per_million": OUT}
        config = {
            "sandbox": {"enabled": True},
            "responses": {"max_context_bytes": 40_000, "max_context_tokens": 5_000},
            "limits": {"stored_bytes_per_key": 2_000_000},
            "providers": [
                {"name": "slow", "protocol": "openai", "base_url": slow.base_url, "api_key": "sk-slow"},
                {
                    "name": "native",
                    "protocol": "openai",
                    "base_url": native.base_url,
                    "api_key": "sk-native",
                    "responses": "native",
                },
            ],
            "models": [
                {"name": "slow-chat", "routes": [{"provider": "slow", "model": "gpt-slow"}], **prices},
                {"name": "native-chat", "routes": [{"provider": "native", "model": "gpt-n"}], **prices},
            ],
        }
        # Two workers: a cancel or delete often lands on the worker not running the response,
        # which notices it at its next lease renewal (the window where the run went on).
        workdir = Path(tmp_path_factory.mktemp("responses-billing"))
        with GatewayProcess(workdir, config=config, workers=2) as gw:
            yield Setup(gw, slow, native)


def _client(gw: GatewayProcess, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)


def _usage(gw: GatewayProcess, key_id: str, requests: int = 1) -> dict[str, float]:
    """The key's totals once `requests` calls are recorded (each worker flushes every second;
    a run stopped from the other worker stops at its next lease renewal), and one flush more."""
    deadline = time.monotonic() + 10
    while True:
        time.sleep(1.2)
        rows = [r for r in gw.admin("GET", "/admin/usage").json()["data"] if r["key_id"] == key_id]
        totals = {m: 0.0 for m in ("requests", "errors", "prompt_tokens", "completion_tokens", "cost")}
        for row in rows:
            for metric in totals:
                totals[metric] += float(row[metric])
        if totals["requests"] >= requests or time.monotonic() > deadline:
            return totals


def _running(client: openai.OpenAI, response_id: str) -> None:
    deadline = time.monotonic() + 10
    while client.responses.retrieve(response_id).status != "in_progress":
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.05)


def _stored_events(gw: GatewayProcess, response_id: str) -> list[str]:
    db = sqlite3.connect(gw.workdir / "data" / "unigate.db")
    try:
        rows = db.execute(
            "SELECT data FROM response_events WHERE response_id = ? ORDER BY sequence_number", (response_id,)
        ).fetchall()
    finally:
        db.close()
    return [str(r[0]) for r in rows]


@pytest.mark.parametrize("model", ["slow-chat", "native-chat"])
@pytest.mark.parametrize("stop", ["cancel", "delete"])
def test_a_run_stopped_mid_stream_is_billed_for_what_it_produced(up: Setup, model: str, stop: str) -> None:
    record = up.gw.create_key_record(budget=5000)
    client = _client(up.gw, record["key"])
    accepted = client.responses.create(model=model, input="Tell me everything", background=True)
    _running(client, accepted.id)
    time.sleep(1.2)  # about ten words are out
    with _client(up.gw, record["key"]) as other:  # a new connection: either worker
        if stop == "cancel":
            assert other.responses.cancel(accepted.id).status == "cancelled"
        else:
            other.responses.delete(accepted.id)
    totals = _usage(up.gw, record["id"])
    print(f"{model} {stop}: {totals}")
    assert totals["requests"] == 1 and totals["errors"] == 1  # recorded as 499, like a disconnect
    assert 3 <= totals["completion_tokens"] < 40  # what it produced before it stopped, not all
    assert totals["prompt_tokens"] > 0
    expected = (totals["prompt_tokens"] * IN + totals["completion_tokens"] * OUT) / 1e6
    assert totals["cost"] == pytest.approx(expected)
    assert f"background response {accepted.id} stopped" in up.gw.log()


def test_cancelling_cannot_get_around_a_budget(up: Setup) -> None:
    """Each run is cancelled mid-stream: the output it produced is charged, so the budget runs
    out after a few (before the fix every cancelled run settled at zero, forever)."""
    record = up.gw.create_key_record(budget=25)
    client = _client(up.gw, record["key"])
    refused = None
    attempt = 0
    for attempt in range(12):  # noqa: B007 (reported below)
        try:
            accepted = client.responses.create(
                model="slow-chat", input="Go on", background=True, max_output_tokens=12
            )
        except openai.RateLimitError as err:
            refused = err
            break
        _running(client, accepted.id)
        time.sleep(0.8)
        client.responses.cancel(accepted.id)
        time.sleep(0.3)  # the run's settlement
    assert refused is not None, "a budget of 25 never ran out over 12 cancelled runs"
    assert isinstance(refused.body, dict) and refused.body.get("code") == "insufficient_quota"
    totals = _usage(up.gw, record["id"], attempt)
    print(f"budget 25: refused after {attempt} cancelled runs; recorded {totals}")
    assert totals["cost"] > 25 - 12 * OUT / 1e6 - 1  # spent up to within one reservation


def test_a_cancel_racing_the_end_gives_one_answer(up: Setup) -> None:
    """Cancels aimed at the instant runs finish: a response the cancel reports as cancelled
    is cancelled on every later read and its stored stream has no `response.completed`; one
    that finished first keeps its whole stream."""
    record = up.gw.create_key_record()
    client = _client(up.gw, record["key"])
    up.slow.slow_seconds = 0.002
    outcomes = {"cancelled": 0, "completed": 0}
    try:
        for i in range(40):
            accepted = client.responses.create(model="slow-chat", input=f"race {i}", background=True)
            time.sleep(0.05 + (i % 8) * 0.01)
            with _client(up.gw, record["key"]) as other:  # a new connection: either worker
                answered = other.responses.cancel(accepted.id).status
            assert answered in outcomes
            outcomes[answered] += 1
            time.sleep(0.4)
            assert client.responses.retrieve(accepted.id).status == answered
            events = _stored_events(up.gw, accepted.id)
            terminal = [e for e in events if "response.completed" in e.split("\n")[0]]
            if answered == "cancelled":
                assert not terminal, f"{accepted.id} is cancelled but its stream completed"
            else:
                assert len(terminal) == 1 and terminal[0] is events[-1]
    finally:
        up.slow.slow_seconds = 0.1
    print(f"cancel vs end: {outcomes}")


def test_live_background_streams_end_with_their_terminal_event(up: Setup) -> None:
    record = up.gw.create_key_record()
    client = _client(up.gw, record["key"])
    up.slow.slow_seconds = 0.001
    try:
        for i in range(30):
            events = list(
                client.responses.create(model="slow-chat", input=f"stream {i}", background=True, stream=True)
            )
            assert events[-1].type == "response.completed", [e.type for e in events[-3:]]
            assert [e.sequence_number for e in events] == list(range(len(events)))
    finally:
        up.slow.slow_seconds = 0.1


def test_deleting_running_responses_leaves_no_event_rows(up: Setup) -> None:
    record = up.gw.create_key_record()
    client = _client(up.gw, record["key"])
    ids = [
        client.responses.create(model="slow-chat", input=f"doomed {i}", background=True).id for i in range(8)
    ]
    time.sleep(0.6)
    for rid in ids:
        with _client(up.gw, record["key"]) as other:  # a new connection: either worker
            other.responses.delete(rid)
    time.sleep(3.0)  # past the other worker's lease renewal and the runs' next event batches
    assert all(_stored_events(up.gw, rid) == [] for rid in ids)


def _chain(client: openai.OpenAI, turns: int, text: str) -> list[Any]:
    made: list[Any] = []
    for _ in range(turns):
        previous = made[-1].id if made else None
        made.append(client.responses.create(model="sandbox-chat", input=text, previous_response_id=previous))
    return made


def test_a_continuation_is_bounded_before_it_loads(up: Setup) -> None:
    client = _client(up.gw, up.gw.create_key())
    chain = _chain(client, 3, "tell me about the sea " * 400)  # ~9 KB a turn, ~2,000 tokens
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(
            model="sandbox-chat", input="hi", previous_response_id=chain[-1].id, store=False
        )
    body = err.value.body
    assert isinstance(body, dict) and body.get("code") == "context_too_large"
    assert body.get("param") == "previous_response_id"
    assert "responses.max_context_tokens" in str(body.get("message"))
    # Below the bound it continues as before.
    ok = client.responses.create(model="sandbox-chat", input="hi", previous_response_id=chain[0].id)
    assert ok.status == "completed"


def test_a_keys_stored_bytes_have_a_quota(up: Setup) -> None:
    record = up.gw.create_key_record()
    client = _client(up.gw, record["key"])
    with pytest.raises(openai.APIStatusError) as err:
        client.responses.create(model="sandbox-chat", input="x " * 1_100_000)  # alone more than the quota
    assert err.value.status_code == 413
    made = []
    with pytest.raises(openai.RateLimitError) as limited:
        for _ in range(40):
            made.append(client.responses.create(model="sandbox-chat", input="y " * 150_000))
    body = limited.value.body
    assert isinstance(body, dict) and body.get("code") == "storage_quota_exceeded"
    assert "limits.stored_bytes_per_key" in str(body.get("message"))
    assert 5 <= len(made) <= 8  # ~300 KB a response against 2 MB
    # Not stored: no quota; deleting gives the bytes back.
    assert (
        client.responses.create(model="sandbox-chat", input="z " * 150_000, store=False).status == "completed"
    )
    for r in made[:3]:
        client.responses.delete(r.id)
    assert client.responses.create(model="sandbox-chat", input="after").status == "completed"
    other = _client(up.gw, up.gw.create_key())  # per key
    assert other.responses.create(model="sandbox-chat", input="y " * 150_000).status == "completed"
