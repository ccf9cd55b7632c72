"""The task engine against a Suno-API relay: the real `unigate serve` process in front of
`FakeSuno` (tests/support/fake_suno.py), all on 127.0.0.1.

Covers submit (fields, `mv` mapping, Bearer key, both submit answer shapes), the status
timeline seen by clients, media URLs and durations, failure with exactly one refund, rejected
and failed submits (never charged), fallback to a second relay, the deadline, unknown upstream
states, batched polling, continuation, and polling that survives a restart.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_suno import (
    CLIP_ERROR,
    DURATIONS,
    FAIL_REASON,
    LYRICS_TEXT,
    LYRICS_TITLE,
    WEIRD,
    FakeSuno,
)
from tests.support.net import HTTPResult, http
from tests.support.served import ServedGateway
from tests.support.waits import until as wait_for

PRICE = 0.5
TERMINAL = ("SUCCESS", "FAILURE")


# --- helpers -------------------------------------------------------------------------------


def _config(*fakes: FakeSuno, deadline: float = 30.0) -> dict[str, Any]:
    names = ["relay", *[f"relay{i}" for i in range(2, len(fakes) + 1)]]
    providers = [
        {"name": name, "protocol": "suno", "base_url": fake.base_url, "api_key": fake.api_key}
        for name, fake in zip(names, fakes, strict=True)
    ]
    return {
        "providers": providers,
        "models": [
            {
                "name": "chirp-v4",
                "price_per_call": PRICE,
                "routes": [{"provider": name, "priority": i} for i, name in enumerate(names)],
            },
            {
                "name": "chirp-v3-5",
                "price_per_call": PRICE,
                "routes": [{"provider": "relay", "model": "chirp-v3-5-upstream"}],
            },
        ],
        "tasks": {"poll_interval": 0.2, "max_poll_interval": 1, "deadline_seconds": deadline},
    }


class Music:
    """A music-family client of one gateway with one key."""

    def __init__(self, gw: ServedGateway, key: str) -> None:
        self.gw = gw
        self.headers = {"Authorization": f"Bearer {key}"}

    def submit(self, body: dict[str, Any], action: str = "music") -> HTTPResult:
        return http("POST", f"{self.gw.base_url}/suno/submit/{action}", body, self.headers)

    def submit_ok(self, body: dict[str, Any], action: str = "music") -> dict[str, Any]:
        res = self.submit(body, action)
        assert res.status == 200, res.body
        envelope = res.json()
        assert envelope["code"] == "success", envelope
        return dict(envelope["data"])

    def fetch(self, task_id: str) -> dict[str, Any]:
        res = http("GET", f"{self.gw.base_url}/suno/fetch/{task_id}", headers=self.headers)
        assert res.status == 200, res.body
        return dict(res.json()["data"])

    def wait(self, task_id: str, status: str, timeout: float = 10.0) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            record = self.fetch(task_id)
            if record["status"] != status and record["status"] in TERMINAL:
                raise AssertionError(f"task ended {record['status']}, expected {status}: {record}")
            return record if record["status"] == status else None

        return wait_for(check, f"task {task_id} to be {status}", timeout)


def _admin_task(gw: ServedGateway, task_id: str) -> dict[str, Any]:
    res = gw.admin("GET", f"/admin/tasks/{task_id}")
    assert res.status == 200, res.body
    return dict(res.json())


def _ledger(gw: ServedGateway, task_id: str) -> list[tuple[str, float]]:
    return sorted((e["kind"], e["amount"]) for e in _admin_task(gw, task_id)["ledger"])


def _db(gw: ServedGateway, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    path = gw.workdir / "data" / "unigate.db"
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as conn:
        return conn.execute(sql, args).fetchall()


def _nothing_recorded_for(gw: ServedGateway, key_id: str) -> None:
    assert _db(gw, "SELECT id FROM tasks WHERE key_id = ?", key_id) == []
    assert _db(gw, "SELECT kind, amount FROM billing_ledger WHERE key_id = ?", key_id) == []


SONG = {"prompt": "[Verse]\nGreen tests at dawn", "title": "Dawn", "tags": "pop, upbeat"}


# --- one relay and one gateway shared by most tests ------------------------------------------


@pytest.fixture(scope="module")
def shared_fake() -> Iterator[FakeSuno]:
    with FakeSuno() as fake:
        yield fake


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, shared_fake: FakeSuno) -> Iterator[ServedGateway]:
    with ServedGateway(tmp_path_factory.mktemp("music"), config=_config(shared_fake)) as gw:
        yield gw


@pytest.fixture
def relay(shared_fake: FakeSuno) -> Iterator[FakeSuno]:
    shared_fake.reset()
    yield shared_fake
    shared_fake.reset()


@pytest.mark.parametrize(
    ("shape", "mv", "upstream_mv"),
    [("id", "chirp-v4", "chirp-v4"), ("record", "chirp-v3-5", "chirp-v3-5-upstream")],
)
def test_full_lifecycle(
    shared: ServedGateway, relay: FakeSuno, shape: str, mv: str, upstream_mv: str
) -> None:
    relay.reset(submit_shape=shape, manual=True)
    music = Music(shared, shared.create_key())
    record = music.submit_ok({**SONG, "mv": mv, "make_instrumental": False})
    task_id = record["task_id"]
    assert (record["status"], record["progress"], record["finish_time"]) == ("SUBMITTED", "0%", 0)

    sent = relay.submits()[-1]
    assert sent.path == "/suno/submit/music"
    assert sent.headers["authorization"] == "Bearer sk-relay"
    assert sent.body == {**SONG, "make_instrumental": False, "mv": upstream_mv}
    up = sent.task_id
    assert up is not None
    admin = _admin_task(shared, task_id)
    assert (admin["provider"], admin["upstream_id"]) == ("relay", up)
    assert _ledger(shared, task_id) == [("reserve", PRICE)]

    # The relay still says "submitted": the gateway polls, nothing moves.
    wait_for(lambda: relay.calls_with(up) >= 2, "two polls of the task")
    assert music.fetch(task_id)["status"] == "SUBMITTED"

    assert relay.advance(up) == "queued"
    record = music.wait(task_id, "QUEUED")
    assert record["start_time"] == record["submit_time"] and record["finish_time"] == 0

    assert relay.advance(up) == "streaming"
    record = music.wait(task_id, "IN_PROGRESS")
    assert record["start_time"] >= record["submit_time"] and record["finish_time"] == 0
    # Suno relays report "0%" until the end; the gateway never shows 100% before it.
    assert record["progress"].endswith("%") and int(record["progress"][:-1]) < 100
    assert [c["status"] for c in record["data"]] == ["streaming", "streaming"]
    assert record["audio_url"] == "", "task-level results appear only on SUCCESS"

    assert relay.advance(up) == "complete"
    record = music.wait(task_id, "SUCCESS")
    assert record["progress"] == "100%"
    assert record["submit_time"] <= record["start_time"] <= record["finish_time"]
    assert record["fail_reason"] == "" and record["error_message"] == ""
    upstream_clips = relay.clip_ids(up)
    clips = record["data"]
    assert [c["status"] for c in clips] == ["complete", "complete"]
    assert record["search_item"] == ",".join(c["id"] for c in clips)
    for clip, upstream_clip, duration in zip(clips, upstream_clips, DURATIONS, strict=True):
        assert clip["id"] != upstream_clip, "clients see the gateway's clip ids"
        for name, url in relay.clip_urls(upstream_clip).items():
            assert clip[name] == url, name
        assert clip["metadata"]["duration"] == duration
        assert clip["title"] == SONG["title"]
    first = relay.clip_urls(upstream_clips[0])
    assert (record["audio_url"], record["image_url"], record["video_url"]) == (
        first["audio_url"],
        first["image_url"],
        first["video_url"],
    )
    assert record["duration"] == round(max(DURATIONS))
    assert (record["title"], record["tags"], record["prompt"]) == (
        SONG["title"],
        SONG["tags"],
        SONG["prompt"],
    )
    assert _ledger(shared, task_id) == [("reserve", PRICE)], "a success is never refunded"


@pytest.mark.parametrize("shape", ["id", "record"])
def test_continuation_sends_the_upstream_clip_id(shared: ServedGateway, relay: FakeSuno, shape: str) -> None:
    relay.reset(submit_shape=shape)
    music = Music(shared, shared.create_key())
    first = music.submit_ok({**SONG, "mv": "chirp-v4"})
    first_up = relay.submits()[-1].task_id
    assert first_up is not None
    done = music.wait(first["task_id"], "SUCCESS")
    public_clip = done["data"][1]["id"]

    follow = music.submit_ok(
        {"prompt": "[Bridge]\nand on", "mv": "chirp-v4", "continue_clip_id": public_clip, "continue_at": 30}
    )
    sent = relay.submits()[-1].body
    assert sent["continue_clip_id"] == relay.clip_ids(first_up)[1]
    assert sent["continue_at"] == 30 and sent["mv"] == "chirp-v4"
    history = follow["data"][0]["metadata"]["history"]
    assert history[0]["id"] == public_clip and history[0]["continue_at"] == 30
    assert _admin_task(shared, follow["task_id"])["provider"] == "relay"
    music.wait(follow["task_id"], "SUCCESS")


def test_continuation_keeps_the_routes_upstream_model(shared: ServedGateway, relay: FakeSuno) -> None:
    """A continuation is pinned to the clip's provider, but must still send the route's mapped
    upstream model (`chirp-v3-5` -> `chirp-v3-5-upstream`), like the original submit did."""
    music = Music(shared, shared.create_key())
    first = music.submit_ok({**SONG, "mv": "chirp-v3-5"})
    assert relay.submits()[-1].body["mv"] == "chirp-v3-5-upstream"
    done = music.wait(first["task_id"], "SUCCESS")
    follow = music.submit_ok(
        {"prompt": "more", "mv": "chirp-v3-5", "continue_clip_id": done["data"][0]["id"], "continue_at": 12}
    )
    sent = relay.submits()[-1].body
    music.wait(follow["task_id"], "SUCCESS")
    assert sent["mv"] == "chirp-v3-5-upstream"


@pytest.mark.parametrize(("script", "reason"), [("fail", FAIL_REASON), ("clip_error", CLIP_ERROR)])
def test_failure_is_refunded_exactly_once(
    shared: ServedGateway, relay: FakeSuno, script: str, reason: str
) -> None:
    relay.reset(script=script)
    key = shared.create_key_record(budget=PRICE)
    music = Music(shared, key["key"])
    task_id = music.submit_ok({**SONG, "mv": "chirp-v4"})["task_id"]
    record = music.wait(task_id, "FAILURE")
    assert record["fail_reason"] == reason and record["error_message"] == reason
    assert record["progress"] == "100%" and record["finish_time"] > 0
    assert [c["status"] for c in record["data"]] == ["error", "error"]
    assert all(c["metadata"]["error_message"] == CLIP_ERROR for c in record["data"])
    assert _ledger(shared, task_id) == [("refund", PRICE), ("reserve", PRICE)]

    up = _admin_task(shared, task_id)["upstream_id"]
    polls = relay.calls_with(up)
    time.sleep(1.0)
    assert _ledger(shared, task_id) == [("refund", PRICE), ("reserve", PRICE)], "refunded exactly once"
    assert music.fetch(task_id)["status"] == "FAILURE"
    assert relay.calls_with(up) == polls, "a finished task is not polled again"
    # The refund gave the budget back: the key can pay for another task.
    relay.reset()
    assert music.submit({**SONG, "mv": "chirp-v4"}).status == 200


def test_rejected_submit_is_relayed_and_not_charged(shared: ServedGateway, relay: FakeSuno) -> None:
    relay.reset(submit_reject=True)
    key = shared.create_key_record(budget=PRICE)
    music = Music(shared, key["key"])
    before = len(relay.submits())
    res = music.submit({**SONG, "mv": "chirp-v4"})
    assert res.status == 400, res.body
    body = res.json()
    assert body["code"] != "success" and body["data"] is None
    assert "bad prompt" in body["message"]
    assert len(relay.submits()) == before + 1, "a 4xx from the relay is not retried"
    _nothing_recorded_for(shared, key["id"])
    # Nothing was charged: the whole budget still pays for one task.
    relay.reset()
    assert music.submit({**SONG, "mv": "chirp-v4"}).status == 200


def test_submit_500_answers_502(shared: ServedGateway, relay: FakeSuno) -> None:
    relay.reset(submit_status=500)
    key = shared.create_key_record()
    res = Music(shared, key["key"]).submit({**SONG, "mv": "chirp-v4"})
    assert res.status == 502, res.body
    body = res.json()
    assert body["code"] == "upstream_unavailable" and body["data"] is None
    assert "500" in body["message"]
    _nothing_recorded_for(shared, key["id"])


def test_unknown_upstream_status_does_not_end_the_task(shared: ServedGateway, relay: FakeSuno) -> None:
    relay.reset(script="unknown", unknown_stages=4)
    music = Music(shared, shared.create_key())
    task_id = music.submit_ok({**SONG, "mv": "chirp-v4"})["task_id"]
    up = relay.submits()[-1].task_id
    assert up is not None

    def weird_served() -> int:
        return relay.served(up).count(WEIRD)

    wait_for(lambda: weird_served() >= 1, f"the relay to report {WEIRD}")
    deadline = time.monotonic() + 15
    while "complete" not in relay.served(up):
        record = music.fetch(task_id)
        assert record["status"] == "IN_PROGRESS", record
        assert time.monotonic() < deadline, "the relay never completed the task"
        time.sleep(0.1)
    assert weird_served() >= 3, "the gateway kept polling through the unknown state"
    record = music.wait(task_id, "SUCCESS")
    assert record["audio_url"] == relay.clip_urls(relay.clip_ids(up)[0])["audio_url"]
    assert _ledger(shared, task_id) == [("reserve", PRICE)]


def test_polls_are_batched_and_stop_when_done(shared: ServedGateway, relay: FakeSuno) -> None:
    relay.reset(fetches_per_stage=2)
    music = Music(shared, shared.create_key())
    task_ids = [
        music.submit_ok({**SONG, "title": f"Song {i}", "mv": "chirp-v4"})["task_id"] for i in range(6)
    ]
    ups = {s.task_id for s in relay.submits()[-6:]}
    assert len(ups) == 6 and None not in ups
    for task_id in task_ids:
        music.wait(task_id, "SUCCESS", timeout=15)

    ours = [c for c in relay.fetch_calls() if ups & set(c)]
    assert all(len(c) == len(set(c)) for c in ours), "no id twice in one call"
    assert max(len(ups & set(c)) for c in ours) >= 3, ours
    time.sleep(1.5)
    after = [c for c in relay.fetch_calls() if ups & set(c)]
    assert len(after) == len(ours), "finished tasks are never polled again"


def test_lyrics_task(shared: ServedGateway, relay: FakeSuno) -> None:
    music = Music(shared, shared.create_key())
    task_id = music.submit_ok({"prompt": "a song about green tests"}, action="lyrics")["task_id"]
    sent = relay.submits()[-1]
    assert sent.path == "/suno/submit/lyrics" and sent.body == {"prompt": "a song about green tests"}
    record = music.wait(task_id, "SUCCESS")
    assert record["action"] == "LYRICS"
    assert record["data"] == {"text": LYRICS_TEXT, "title": LYRICS_TITLE, "status": "complete"}


# --- tests that need their own gateway -------------------------------------------------------


def test_falls_back_to_the_second_relay(gateway_factory: Callable[..., ServedGateway]) -> None:
    with FakeSuno(submit_status=500) as broken, FakeSuno(api_key="sk-relay2") as second:
        gw = gateway_factory(_config(broken, second))
        music = Music(gw, gw.create_key())
        task_id = music.submit_ok({**SONG, "mv": "chirp-v4"})["task_id"]
        assert len(broken.submits()) == 1
        sent = second.submits()
        assert len(sent) == 1 and sent[0].headers["authorization"] == "Bearer sk-relay2"
        admin = _admin_task(gw, task_id)
        assert (admin["provider"], admin["upstream_id"]) == ("relay2", sent[0].task_id)
        music.wait(task_id, "SUCCESS")
        assert broken.fetch_calls() == [], "the task is polled where it was submitted"
        assert _ledger(gw, task_id) == [("reserve", PRICE)]


def test_stalled_task_times_out_and_is_refunded_once(gateway_factory: Callable[..., ServedGateway]) -> None:
    with FakeSuno(script="stall") as fake:
        gw = gateway_factory(_config(fake, deadline=4))
        music = Music(gw, gw.create_key())
        started = time.monotonic()
        task_id = music.submit_ok({**SONG, "mv": "chirp-v4"})["task_id"]
        music.wait(task_id, "IN_PROGRESS")
        record = music.wait(task_id, "FAILURE", timeout=12)
        assert time.monotonic() - started >= 3.5
        assert "timed out" in record["fail_reason"].lower(), record["fail_reason"]
        assert record["error_message"] == record["fail_reason"]
        assert record["progress"] == "100%" and record["finish_time"] > 0
        assert _ledger(gw, task_id) == [("refund", PRICE), ("reserve", PRICE)]
        up = _admin_task(gw, task_id)["upstream_id"]
        polls = fake.calls_with(up)
        time.sleep(1.0)
        assert _ledger(gw, task_id) == [("refund", PRICE), ("reserve", PRICE)], "refunded exactly once"
        assert fake.calls_with(up) == polls, "a timed-out task is not polled again"


def _restart(tmp_path: Path, fake: FakeSuno, in_flight_poll: bool) -> None:
    config = _config(fake)
    first = ServedGateway(tmp_path, config=config).start()
    second: ServedGateway | None = None
    try:
        key = first.create_key()
        music = Music(first, key)
        task_id = music.submit_ok({**SONG, "mv": "chirp-v4"})["task_id"]
        up = fake.submits()[-1].task_id
        assert up is not None
        fake.advance(up)
        music.wait(task_id, "QUEUED")
        if in_flight_poll:
            fake.fetch_delay = 3.0
            wait_for(lambda: fake.in_flight() > 0, "a poll in flight")
        first.stop()
        fake.fetch_delay = 0.0
        assert fake.advance(up, 2) == "complete"

        second = ServedGateway(tmp_path, config=config).start()
        try:
            record = Music(second, key).wait(task_id, "SUCCESS", timeout=8)
        except AssertionError as exc:
            rows = _db(second, "SELECT status, lease_owner, lease_until FROM tasks WHERE id = ?", task_id)
            status, owner, until = rows[0]
            raise AssertionError(
                f"{exc}; the task is {status}, leased by the stopped process {owner!r} "
                f"for another {until - time.time():.0f}s"
            ) from None
        assert record["audio_url"] == fake.clip_urls(fake.clip_ids(up)[0])["audio_url"]
        assert _ledger(second, task_id) == [("reserve", PRICE)]
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_polling_survives_a_restart(tmp_path: Path) -> None:
    with FakeSuno(manual=True) as fake:
        _restart(tmp_path, fake, in_flight_poll=False)


def test_polling_survives_a_restart_during_a_poll(tmp_path: Path) -> None:
    """SIGTERM while a poll is waiting on the relay: the next process must pick the task up
    promptly, not after the stopped poller's lease (60 s) expires."""
    with FakeSuno(manual=True) as fake:
        _restart(tmp_path, fake, in_flight_poll=True)
