"""Background responses (`background: true`) with the real `openai` SDK and real gateway
processes: accepted at once as `queued`, run by the gateway (`in_progress` -> `completed`) on
the sandbox, a slow chat-only upstream and a native Responses upstream; cancelled (the upstream
call is dropped); streamed from the stored events and resumed with `starting_after`; and
fetched and cancelled through a second gateway process sharing the database."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_responses import FakeOpenAIResponses
from tests.support.gateway import on_shared_database
from tests.support.served import ServedGateway

SLOW_WORDS = "one two three four five six seven eight nine ten"


@dataclass
class Setup:
    gw: ServedGateway
    client: openai.OpenAI
    slow: FakeOpenAI
    native: FakeOpenAIResponses


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with (
        FakeOpenAI(mode="slow_stream", slow_seconds=0.25, reply_text=SLOW_WORDS) as slow,
        FakeOpenAIResponses() as native,
    ):
        config = {
            "sandbox": {"enabled": True},
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
                {"name": "slow-chat", "routes": [{"provider": "slow", "model": "gpt-slow"}]},
                {"name": "native-chat", "routes": [{"provider": "native", "model": "gpt-native"}]},
            ],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("responses-bg")), config=config) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            yield Setup(gw, client, slow, native)


def _statuses_until_done(client: openai.OpenAI, response_id: str, timeout: float = 15.0) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.responses.retrieve(response_id).status
        assert status is not None
        if not seen or seen[-1] != status:
            seen.append(status)
        if status not in ("queued", "in_progress"):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{response_id} still pending after {timeout} s: {seen}")


@pytest.mark.parametrize("model", ["sandbox-chat", "slow-chat", "native-chat"])
def test_a_background_response_is_accepted_at_once_and_runs_to_completion(up: Setup, model: str) -> None:
    started = time.monotonic()
    accepted = up.client.responses.create(model=model, input="Say something", background=True)
    assert time.monotonic() - started < 1.0  # answered before the upstream has
    assert accepted.status == "queued" and accepted.background is True and accepted.output == []
    seen = _statuses_until_done(up.client, accepted.id)
    assert seen[-1] == "completed", seen
    if model == "slow-chat":
        assert "in_progress" in seen  # the 2.5 s run was watched while it ran
    done = up.client.responses.retrieve(accepted.id)
    assert done.id == accepted.id and done.background is True
    assert done.output_text and done.usage is not None and done.usage.output_tokens > 0
    if model == "slow-chat":
        assert done.output_text.split() == SLOW_WORDS.split()
    # It continues a conversation like any stored response.
    follow = up.client.responses.create(model="sandbox-chat", input="And then?", previous_response_id=done.id)
    assert follow.status == "completed"


def test_a_running_response_cannot_be_continued_yet(up: Setup) -> None:
    accepted = up.client.responses.create(model="slow-chat", input="Take your time", background=True)
    with pytest.raises(openai.BadRequestError) as err:
        up.client.responses.create(model="sandbox-chat", input="Next", previous_response_id=accepted.id)
    assert err.value.body is not None and "still" in str(err.value.body)
    up.client.responses.cancel(accepted.id)


def test_cancel_stops_the_run_and_the_upstream_call(up: Setup) -> None:
    before = up.slow.cancelled
    accepted = up.client.responses.create(model="slow-chat", input="A long story", background=True)
    deadline = time.monotonic() + 10
    while up.client.responses.retrieve(accepted.id).status != "in_progress":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)  # some words are out
    cancelled = up.client.responses.cancel(accepted.id)
    assert cancelled.status == "cancelled" and cancelled.id == accepted.id
    deadline = time.monotonic() + 5
    while up.slow.cancelled == before:  # the upstream stream was dropped
        assert time.monotonic() < deadline, "the upstream call went on after the cancel"
        time.sleep(0.05)
    time.sleep(3.0)  # past the rest of the stream: nothing overwrites the cancel
    assert up.client.responses.retrieve(accepted.id).status == "cancelled"
    again = up.client.responses.cancel(accepted.id)  # a second cancel is no error
    assert again.status == "cancelled"


def test_only_background_responses_can_be_cancelled(up: Setup) -> None:
    plain = up.client.responses.create(model="sandbox-chat", input="Hi")
    with pytest.raises(openai.BadRequestError) as err:
        up.client.responses.cancel(plain.id)
    assert "background" in str(err.value.body)
    with pytest.raises(openai.NotFoundError):
        up.client.responses.cancel("resp_missing")


def test_background_needs_store(up: Setup) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        up.client.responses.create(model="sandbox-chat", input="Hi", background=True, store=False)
    assert isinstance(err.value.body, dict) and err.value.body.get("param") == "store"
    with pytest.raises(openai.NotFoundError):
        up.client.responses.create(model="no-such-model", input="Hi", background=True)


def _events(stream: Any) -> list[Any]:
    return list(stream)


@pytest.mark.parametrize("model", ["slow-chat", "native-chat"])
def test_a_background_stream_is_numbered_and_resumable(up: Setup, model: str) -> None:
    events = _events(up.client.responses.create(model=model, input="Stream it", background=True, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.queued"]
    assert kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert [e.sequence_number for e in events] == list(range(len(events)))
    response_id = events[0].response.id
    assert all(e.response.id == response_id for e in events if hasattr(e, "response"))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == up.client.responses.retrieve(response_id).output_text
    # Resumed from event 3: exactly the events after it, the same ones.
    resumed = _events(up.client.responses.retrieve(response_id, stream=True, starting_after=3))
    assert [e.sequence_number for e in resumed] == list(range(4, len(events)))
    assert [e.model_dump() for e in resumed] == [e.model_dump() for e in events[4:]]


def test_a_resumed_stream_follows_a_running_response(up: Setup) -> None:
    accepted = up.client.responses.create(model="slow-chat", input="Follow me", background=True)
    events = _events(up.client.responses.retrieve(accepted.id, stream=True, starting_after=0))
    assert events[0].sequence_number == 1 and events[0].type == "response.queued"
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text.split() == SLOW_WORDS.split()


def test_bad_starting_after_is_a_400(up: Setup) -> None:
    accepted = up.client.responses.create(model="sandbox-chat", input="Hi", background=True)
    _statuses_until_done(up.client, accepted.id)
    for bad in ("x", "-2", "1e3", "99999999999"):
        with pytest.raises(openai.BadRequestError):
            up.client.responses.retrieve(accepted.id, extra_query={"stream": "true", "starting_after": bad})


def test_another_process_fetches_and_cancels_it(up: Setup, tmp_path: Path) -> None:
    before = up.slow.cancelled
    up.slow.slow_seconds = 1.0  # a 10 s run: still running when the second process is up
    accepted = up.client.responses.create(model="slow-chat", input="Across processes", background=True)
    database = f"sqlite:///{up.gw.workdir / 'data' / 'unigate.db'}"
    with ServedGateway(tmp_path, env={"UNIGATE_DATABASE_URL": database}) as second:
        there = openai.OpenAI(base_url=second.base_url + "/v1", api_key=up.client.api_key, max_retries=0)
        deadline = time.monotonic() + 10
        while there.responses.retrieve(accepted.id).status != "in_progress":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert there.responses.cancel(accepted.id).status == "cancelled"
        # The first process notices at its next lease renewal and drops the upstream call.
        noticed = time.monotonic()
        while up.slow.cancelled == before:
            assert time.monotonic() - noticed < 5, "the run went on after a cancel on another process"
            time.sleep(0.05)
    up.slow.slow_seconds = 0.25
    assert up.client.responses.retrieve(accepted.id).status == "cancelled"


@pytest.mark.process
def test_a_dead_workers_response_is_run_again_by_another_process(up: Setup, tmp_path: Path) -> None:
    """kill -9 of the process running a background response: another process sharing the
    database claims it when the lease lapses and runs it to completion."""
    config = {
        "sandbox": {"enabled": True},
        "responses": {"background_lease_seconds": 3},
        "providers": [
            {"name": "slow", "protocol": "openai", "base_url": up.slow.base_url, "api_key": "sk-s"}
        ],
        "models": [{"name": "slow-chat", "routes": [{"provider": "slow", "model": "gpt-slow"}]}],
    }
    first = on_shared_database(tmp_path, "a", config).start()
    try:
        key = first.create_key()
        client = openai.OpenAI(base_url=first.base_url + "/v1", api_key=key, max_retries=0)
        accepted = client.responses.create(model="slow-chat", input="Survive this", background=True)
        deadline = time.monotonic() + 10
        while client.responses.retrieve(accepted.id).status != "in_progress":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        first.kill()
    killed = time.monotonic()
    with on_shared_database(tmp_path, "b", config) as second:
        there = openai.OpenAI(base_url=second.base_url + "/v1", api_key=key, max_retries=0)
        while (done := there.responses.retrieve(accepted.id)).status in ("queued", "in_progress"):
            assert time.monotonic() - killed < 20, "no process took the response over"
            time.sleep(0.1)
        took = time.monotonic() - killed
        print(f"background response completed {took:.1f} s after its worker was killed (lease 3 s)")
        assert done.status == "completed"
        assert done.output_text.split() == SLOW_WORDS.split()
        assert "taken over" in second.log()
