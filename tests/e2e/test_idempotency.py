"""`Idempotency-Key` on task submits, against the real server: a retry (same key, same body)
answers the same task with the same answer and never reaches the upstream or the budget
twice, also when the duplicates arrive together on several workers; another body is a 409
in the family's shape; keys are per API key; and a task committed just before a kill -9,
whose answer the client never read, is what the retry on the restarted gateway gets."""

from __future__ import annotations

import socket
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.fake_suno import FakeSuno
from tests.support.gateway import GatewayProcess
from tests.support.net import HTTPResult, http
from tests.support.served import ServedGateway

PRICE = 0.5
SONG = {"prompt": "[Verse]\nRivers run", "mv": "chirp-v4", "title": "Rivers", "tags": "folk"}


def _relay_config(fake: FakeSuno) -> dict[str, Any]:
    return {
        "providers": [
            {"name": "relay", "protocol": "suno", "base_url": fake.base_url, "api_key": fake.api_key}
        ],
        "models": [{"name": "chirp-v4", "price_per_call": PRICE, "routes": [{"provider": "relay"}]}],
    }


def _post(
    gw: ServedGateway | GatewayProcess, path: str, key: str, body: Any, idem: str | None, **headers: str
) -> HTTPResult:
    sent = {"Authorization": f"Bearer {key}", "Content-Type": "application/json", **headers}
    if idem is not None:
        sent["Idempotency-Key"] = idem
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return http("POST", gw.base_url + path, data, sent)


def _together(n: int, call: Callable[[], HTTPResult]) -> list[HTTPResult]:
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(lambda _: call(), range(n)))


def _db(gw: ServedGateway | GatewayProcess) -> sqlite3.Connection:
    return sqlite3.connect(Path(gw.env["UNIGATE_DATA_DIR"]) / "unigate.db")


def _count(gw: ServedGateway | GatewayProcess, sql: str, *args: Any) -> int:
    with _db(gw) as conn:
        return int(conn.execute(sql, args).fetchone()[0])


@pytest.mark.process
def test_music_retry_and_concurrent_duplicates_make_one_task_and_one_charge(tmp_path: Path) -> None:
    with FakeSuno(submit_delay=1.0) as fake:
        gw = GatewayProcess(tmp_path, config=_relay_config(fake), workers=2).start()
        try:
            key = gw.create_key(budget=10)
            # Six copies at once, spread over two workers, while the upstream takes 1 s.
            answers = _together(6, lambda: _post(gw, "/suno/submit/music", key, SONG, "song-1"))
            assert [a.status for a in answers] == [200] * 6, [a.body for a in answers]
            assert len({a.body for a in answers}) == 1, "the same answer, byte for byte"
            task_id = answers[0].json()["data"]["task_id"]
            assert len(fake.submits()) == 1, "one upstream submit"
            # A later retry, the same body spelled differently (key order, spacing).
            respelled = (
                b'{ "tags": "folk", "title": "Rivers", "mv": "chirp-v4", "prompt": "[Verse]\\nRivers run" }'
            )
            again = _post(gw, "/suno/submit/music", key, respelled, "song-1")
            assert again.status == 200 and again.body == answers[0].body
            assert len(fake.submits()) == 1
            ledger = gw.admin("GET", f"/admin/tasks/{task_id}").json()["ledger"]
            assert ledger == [{"kind": "reserve", "amount": PRICE}], "charged once"
            assert _count(gw, "SELECT count(*) FROM tasks") == 1

            other_body = _post(gw, "/suno/submit/music", key, {**SONG, "title": "Lakes"}, "song-1")
            assert other_body.status == 409
            assert other_body.json() == {
                "code": "idempotency_key_reused",
                "message": other_body.json()["message"],
                "data": None,
            }
            other_key = gw.create_key()
            theirs = _post(gw, "/suno/submit/music", other_key, SONG, "song-1")
            assert theirs.status == 200 and theirs.json()["data"]["task_id"] != task_id, (
                "keys are per API key"
            )
            fresh = _post(gw, "/suno/submit/music", key, SONG, "song-2")
            assert fresh.status == 200 and fresh.json()["data"]["task_id"] != task_id
            plain = _post(gw, "/suno/submit/music", key, SONG, None)
            assert plain.status == 200 and plain.json()["data"]["task_id"] != task_id
            assert len(fake.submits()) == 4
            for bad in ("x" * 256, "with space"):
                res = _post(gw, "/suno/submit/music", key, SONG, bad)
                assert res.status == 400 and res.json()["code"] == "invalid_idempotency_key"
            assert len(fake.submits()) == 4
        finally:
            gw.stop()


def test_a_failed_submit_frees_its_key(tmp_path: Path) -> None:
    with FakeSuno(submit_reject=True) as fake:
        gw = ServedGateway(tmp_path, config=_relay_config(fake)).start()
        try:
            key = gw.create_key()
            assert _post(gw, "/suno/submit/music", key, SONG, "retry-me").status == 400
            fake.reset()
            ok = _post(gw, "/suno/submit/music", key, SONG, "retry-me")
            assert ok.status == 200, ok.body
            assert _post(gw, "/suno/submit/music", key, SONG, "retry-me").body == ok.body
            assert len(fake.submits()) == 2
        finally:
            gw.stop()


VIDEO = {"model": "sandbox-video", "prompt": "a lighthouse at dusk", "seconds": 2}


@pytest.mark.process
def test_video_families_answer_the_same_task_to_a_retry(tmp_path: Path) -> None:
    with GatewayProcess(tmp_path, workers=2) as gw:
        key = gw.create_key()
        answers = _together(5, lambda: _post(gw, "/v1/video/generations", key, VIDEO, "clip-1"))
        assert [a.status for a in answers] == [200] * 5, [a.body for a in answers]
        assert len({a.json()["id"] for a in answers}) == 1 and len({a.body for a in answers}) == 1
        assert _count(gw, "SELECT count(*) FROM tasks WHERE family = 'video'") == 1
        conflict = _post(gw, "/v1/video/generations", key, {**VIDEO, "prompt": "a harbour"}, "clip-1")
        assert conflict.status == 409
        error = conflict.json()["error"]
        assert error["code"] == "idempotency_key_reused" and error["param"] == "Idempotency-Key"

        openai_style = _together(
            3, lambda: _post(gw, "/v1/videos", key, {"model": "sora-2", "prompt": "x"}, "v-1")
        )
        assert len({a.json()["id"] for a in openai_style}) == 1

        kling = {"model_name": "kling-v1", "prompt": "a fox", "duration": "5", "external_task_id": "mine-1"}
        first = _post(gw, "/kling/v1/videos/text2video", key, kling, "k-1")
        retry = _post(gw, "/kling/v1/videos/text2video", key, kling, "k-1")
        assert first.status == retry.status == 200, (first.body, retry.body)
        assert retry.json()["data"]["task_id"] == first.json()["data"]["task_id"], "not a duplicate_task"
        duplicate = _post(gw, "/kling/v1/videos/text2video", key, kling, "k-2")
        assert duplicate.status == 400 and duplicate.json()["code"] == 1201, "a new key is still checked"
        changed = _post(gw, "/kling/v1/videos/text2video", key, {**kling, "prompt": "a wolf"}, "k-1")
        assert changed.status == 409 and changed.json()["code"] == 1201

        veo = {"instances": [{"prompt": "waves"}], "parameters": {"durationSeconds": 4}}
        path = "/v1beta/models/veo-3.0-generate-001:predictLongRunning"
        names = {_post(gw, path, key, veo, "veo-1").json()["name"] for _ in range(2)}
        assert len(names) == 1
        vidu = {"model": "audio1.0", "prompt": "rain on a roof", "duration": 3}
        ids = {_post(gw, "/ent/v2/text2audio", key, vidu, "vidu-1").json()["task_id"] for _ in range(2)}
        assert len(ids) == 1
        vidu_conflict = _post(gw, "/ent/v2/text2audio", key, {**vidu, "duration": 4}, "vidu-1")
        assert vidu_conflict.status == 409 and vidu_conflict.json()["reason"] == "Conflict"


def _send_without_reading(
    gw: ServedGateway, path: str, key: str, body: dict[str, Any], idem: str
) -> socket.socket:
    """A client that sends its submit and then never reads the answer."""
    data = orjson.dumps(body)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{gw.port}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nIdempotency-Key: {idem}\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    sock = socket.create_connection(("127.0.0.1", gw.port))
    sock.sendall(head.encode() + data)
    return sock


@pytest.mark.process
def test_kill_9_after_commit_then_retry_on_the_restarted_gateway(tmp_path: Path) -> None:
    gw = GatewayProcess(tmp_path).start()
    key = gw.create_key()
    sock = _send_without_reading(gw, "/suno/submit/music", key, SONG, "crash-1")
    deadline = time.monotonic() + 15
    committed: str | None = None
    while committed is None and time.monotonic() < deadline:
        with _db(gw) as conn:
            row = conn.execute(
                "SELECT task_id FROM idempotency_keys WHERE idempotency_key = 'crash-1'"
            ).fetchone()
        committed = row[0] if row else None
        time.sleep(0.02)
    assert committed is not None, "the task and its key are committed together"
    gw.kill()
    sock.close()
    restarted = GatewayProcess(tmp_path)
    restarted.port, restarted.base_url = gw.port, gw.base_url
    restarted.log_path = tmp_path / "restarted.log"
    restarted.start()
    try:
        retry = _post(restarted, "/suno/submit/music", key, SONG, "crash-1")
        assert retry.status == 200, retry.body
        record = retry.json()["data"]
        assert record["task_id"] == committed and record["status"] == "SUBMITTED"
        assert _count(restarted, "SELECT count(*) FROM tasks") == 1, "no second task"
        assert _post(restarted, "/suno/submit/music", key, SONG, "crash-1").body == retry.body
    finally:
        restarted.stop()
