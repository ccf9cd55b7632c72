"""Vidu's sound-effect and lip-sync paths through the sandbox, against the real server process:
tasks move created → processing → success, their files download and decode with PyAV (the
sound lasts the requested duration, the lip-synced video's sound track lasts as long as the
given or spoken audio), callbacks arrive signed with the query's body, failures refund the
price once, ids stay within their family and key, and bad input is a 4xx in Vidu's shape."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import pytest
from PIL import Image

from tests.support.media_fixtures import encode_tone, make_image
from tests.support.net import http
from tests.support.readme import code_blocks, section, shell_commands
from tests.support.receiver import WebhookReceiver
from tests.support.served import ServedGateway
from tests.support.task_client import FileServer, TaskClient, poll_until
from tests.support.video import decode_video, sandbox_config
from unigate_sandbox.media.speech import speech_duration

PRICE = 0.5
RANK = {"created": 0, "queueing": 1, "processing": 2, "success": 3, "failed": 3}
ERROR_KEYS = {"code", "reason", "message", "metadata"}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    config = sandbox_config(2.0)
    config["tasks"] = {**config["tasks"], "poll_interval": 0.2}
    for model in config["models"]:
        if model["name"] in ("audio1.0", "lip-sync"):
            model["price_per_call"] = PRICE
    env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
    with ServedGateway(Path(tmp_path_factory.mktemp("vidu")), config=config, env=env) as g:
        yield g


@pytest.fixture(scope="module")
def files() -> Iterator[FileServer]:
    from unigate_sandbox.media.video import render_video

    media = {
        "face.mp4": render_video("a face", 160, 120, 2.0, fps=12),
        "speech.wav": encode_tone(1.5, "wav"),
        "photo.png": make_image(64, 64, "png"),
        "notes.mp4": b"these are notes, not a video at all",
    }
    with FileServer(files=media) as server:
        yield server


@pytest.fixture(scope="module")
def key_record(gw: ServedGateway) -> dict[str, Any]:
    return gw.create_key_record(name="vidu")


@pytest.fixture(scope="module")
def client(gw: ServedGateway, key_record: dict[str, Any]) -> TaskClient:
    return TaskClient(gw.base_url, {"Authorization": f"Token {key_record['key']}"})


def _finish(client: TaskClient, task_id: str) -> tuple[dict[str, Any], list[str]]:
    polled = client.wait(f"/ent/v2/tasks/{task_id}/creations", lambda d: d["state"], ("success", "failed"))
    assert polled.states == sorted(polled.states, key=RANK.__getitem__)  # only ever forward
    return polled.final, polled.states


def _audio_seconds(data: bytes) -> float:
    with av.open(io.BytesIO(data), mode="r") as container:
        stream = container.streams.audio[0]
        samples: int = sum(frame.samples for frame in container.decode(stream))
        return samples / stream.rate


def test_text2audio_makes_a_sound_of_the_requested_length(client: TaskClient) -> None:
    body = {"model": "audio1.0", "prompt": "rain on a tin roof", "duration": 3.5, "payload": "order-9"}
    res = client.call("POST", "/ent/v2/text2audio", body)
    assert res.status == 200, res.body
    created = res.json()
    assert set(created) == {"task_id", "state", "model", "prompt", "duration", "seed", "payload", "credits",
                            "created_at"}  # fmt: skip
    assert (created["state"], created["model"], created["prompt"]) == ("created", "audio1.0", body["prompt"])
    assert created["duration"] == 3.5 and created["credits"] == PRICE and created["payload"] == "order-9"
    assert isinstance(created["seed"], int) and created["seed"] > 0  # 0/absent: a random seed, stored
    made = dt.datetime.fromisoformat(created["created_at"].replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.UTC) - made).total_seconds()) < 60

    done, states = _finish(client, created["task_id"])
    assert "processing" in states
    expected = {"id": created["task_id"], "state": "success", "err_code": "", "credits": PRICE,
                "payload": "order-9", "bgm": False, "off_peak": False}  # fmt: skip
    assert done == {**expected, "creations": done["creations"]}
    [creation] = done["creations"]
    assert set(creation) == {"id", "url", "cover_url"}
    assert abs(_audio_seconds(http("GET", creation["url"]).body) - 3.5) < 0.1

    again = client.call("POST", "/ent/v2/text2audio", {"model": "audio1.0", "prompt": "a bell", "seed": 42})
    assert again.json()["seed"] == 42 and again.json()["duration"] == 10  # the default duration


def test_lip_sync_from_an_audio_url(client: TaskClient, files: FileServer) -> None:
    body = {"video_url": files.url("face.mp4"), "audio_url": files.url("speech.wav"),
            "ref_photo_url": files.url("photo.png"), "text": "the audio wins", "voice_id": "v1"}  # fmt: skip
    res = client.call("POST", "/ent/v2/lip-sync", body)
    assert res.status == 200, res.body
    created = res.json()
    assert created["model"] == "lip-sync" and created["state"] == "created" and created["credits"] == PRICE
    assert created["video_url"] == body["video_url"] and created["audio_url"] == body["audio_url"]
    assert "prompt" not in created and "duration" not in created

    done, _ = _finish(client, created["task_id"])
    assert done["state"] == "success", done
    [creation] = done["creations"]
    video = decode_video(http("GET", creation["url"]).body)
    assert (video.codec, video.width, video.height) == ("h264", 160, 120)
    assert abs(video.audio_seconds - 1.5) < 0.1  # the given audio is the sound track
    cover = Image.open(io.BytesIO(http("GET", creation["cover_url"]).body))
    assert cover.format == "WEBP" and cover.size == (160, 120)


def test_lip_sync_from_text_with_signed_callbacks(
    client: TaskClient, key_record: dict[str, Any], files: FileServer
) -> None:
    text = "Hello there, my good friend."
    with WebhookReceiver(secret=key_record["webhook_secret"]) as receiver:
        body = {"video_url": files.url("face.mp4"), "text": text, "voice_id": "narrator", "speed": 1.25,
                "callback_url": receiver.url, "payload": "p-1"}  # fmt: skip
        res = client.call("POST", "/ent/v2/lip-sync", body)
        assert res.status == 200, res.body
        task_id = res.json()["task_id"]
        assert res.json()["text"] == text and res.json()["speed"] == 1.25
        done, _ = _finish(client, task_id)
        assert done["state"] == "success", done
        video = decode_video(http("GET", done["creations"][0]["url"]).body)
        assert abs(video.audio_seconds - speech_duration(text, 1.25)) < 0.1

        poll_until(lambda: {"done": [d.body["state"] for d in receiver.snapshot()]},
                   lambda seen: "success" in seen["done"], {True})  # fmt: skip
        deliveries = receiver.snapshot()
        assert deliveries and all(d.valid_signature for d in deliveries)
        assert {d.body["id"] for d in deliveries} == {task_id}
        assert deliveries[-1].body == done  # the callback body is the query's body
        assert [d.body["state"] for d in deliveries] == sorted(
            (d.body["state"] for d in deliveries), key=RANK.__getitem__
        )


def test_a_failing_task_reports_its_reason_and_is_refunded_once(
    gw: ServedGateway, client: TaskClient, files: FileServer
) -> None:
    sound = client.call(
        "POST", "/ent/v2/text2audio", {"model": "audio1.0", "prompt": "[sandbox:fail] thunder"}
    )
    lips = client.call("POST", "/ent/v2/lip-sync", {"video_url": files.url("face.mp4"),
                       "text": "[sandbox:fail] say nothing", "voice_id": "v"})  # fmt: skip
    for res in (sound, lips):
        assert res.status == 200, res.body
        done, _ = _finish(client, res.json()["task_id"])
        assert done["state"] == "failed" and done["creations"] == []
        assert "asked to fail" in done["err_code"]
        ledger = gw.admin("GET", f"/admin/tasks/{done['id']}").json()["ledger"]
        assert sorted((e["kind"], e["amount"]) for e in ledger) == [("refund", PRICE), ("reserve", PRICE)]


def test_a_task_is_found_only_through_vidu_and_by_its_key(gw: ServedGateway, client: TaskClient) -> None:
    res = client.call("POST", "/ent/v2/text2audio", {"model": "audio1.0", "prompt": "wind", "duration": 2})
    task_id = res.json()["task_id"]
    key = client.headers["Authorization"].split()[1]
    music = http("GET", f"{gw.base_url}/suno/fetch/{task_id}", headers={"Authorization": f"Bearer {key}"})
    assert music.status == 404 and music.json()["data"] is None
    visual = http("GET", f"{gw.base_url}/api/tasks/visual/segmentation/{task_id}", headers={"X-API-KEY": key})
    assert visual.status == 404 and set(visual.json()) == {"status", "message"}
    stranger = TaskClient(gw.base_url, {"Authorization": f"Token {gw.create_key()}"})
    for who, task in ((stranger, task_id), (client, "no-such-task")):
        res = who.call("GET", f"/ent/v2/tasks/{task}/creations")
        assert res.status == 404 and res.json()["reason"] == "TaskNotFound" and set(res.json()) == ERROR_KEYS
    assert client.call("GET", f"/ent/v2/tasks/{task_id}/creations").status == 200


def test_token_and_bearer_keys_and_the_audio_family(gw: ServedGateway, client: TaskClient) -> None:
    key = client.headers["Authorization"].split()[1]
    body = {"model": "audio1.0", "prompt": "a door creaks", "duration": 2}
    assert (
        http("POST", gw.base_url + "/ent/v2/text2audio", body, {"Authorization": f"Bearer {key}"}).status
        == 200
    )
    for headers, status, reason in (
        ({}, 401, "Unauthorized"),
        ({"Authorization": "Token ugk_wrong"}, 401, "Unauthorized"),
        ({"Authorization": f"Token {gw.create_key(families=['text'])}"}, 403, "Forbidden"),
    ):
        res = http("POST", gw.base_url + "/ent/v2/text2audio", body, headers)
        assert res.status == status and res.json()["reason"] == reason and set(res.json()) == ERROR_KEYS


def test_bad_input_is_a_4xx_in_vidus_shape(gw: ServedGateway, client: TaskClient, files: FileServer) -> None:
    video = files.url("face.mp4")
    cases: list[tuple[str, Any, int]] = [
        ("text2audio", {"model": "audio1.0"}, 400),  # no prompt
        ("text2audio", {"prompt": "rain"}, 400),  # no model
        ("text2audio", {"model": "audio1.0", "prompt": "rain", "duration": 11}, 400),
        ("text2audio", {"model": "audio1.0", "prompt": "rain", "duration": 1.5}, 400),
        ("text2audio", {"model": "audio1.0", "prompt": "rain", "duration": "long"}, 400),
        ("text2audio", {"model": "audio1.0", "prompt": "x" * 1501}, 400),
        ("text2audio", {"model": "audio1.0", "prompt": "rain", "seed": -1}, 400),
        ("text2audio", {"model": "audio9", "prompt": "rain"}, 404),
        ("text2audio", [1, 2], 400),
        ("lip-sync", {"audio_url": files.url("speech.wav")}, 400),  # no video
        ("lip-sync", {"video_url": video}, 400),  # neither audio nor text
        ("lip-sync", {"video_url": video, "text": "hi", "voice_id": "v"}, 400),  # under 4 characters
        ("lip-sync", {"video_url": video, "text": "hello there"}, 400),  # no voice_id
        ("lip-sync", {"video_url": video, "text": "hello there", "voice_id": "v", "speed": 3}, 400),
        ("lip-sync", {"video_url": video, "audio_url": files.url("speech.wav"), "volume": 11}, 400),
        ("lip-sync", {"video_url": "ftp://example.com/a.mp4", "audio_url": files.url("speech.wav")}, 400),
        ("lip-sync", {"video_url": files.url("notes.mp4"), "audio_url": files.url("speech.wav")}, 400),
        ("lip-sync", {"video_url": video, "audio_url": files.url("photo.png")}, 400),  # not audio
        ("lip-sync", {"video_url": files.url("missing.mp4"), "audio_url": files.url("speech.wav")}, 400),
    ]
    for path, body, status in cases:
        res = client.call("POST", f"/ent/v2/{path}", body)
        assert res.status == status and set(res.json()) == ERROR_KEYS, (body, res.status, res.body)
        assert res.json()["code"] == status, res.body
    raw = client.call("POST", "/ent/v2/text2audio", b"{not json", **{"Content-Type": "application/json"})
    assert raw.status == 400 and raw.json()["reason"] == "BadRequest"


def test_an_unsafe_callback_url_is_refused(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key()
    for hook in ("http://127.0.0.1:9/hook", "file:///etc/passwd", "http://169.254.169.254/latest"):
        body = {"model": "audio1.0", "prompt": "rain", "callback_url": hook}
        res = http(
            "POST", sandbox_gateway.base_url + "/ent/v2/text2audio", body, {"Authorization": f"Token {key}"}
        )
        assert res.status == 400 and set(res.json()) == ERROR_KEYS and "callback_url" in res.json()["message"]


# --- against a Vidu upstream (the fake) ----------------------------------------------------


@pytest.fixture(scope="module")
def fake_vidu() -> Iterator[Any]:
    from tests.support.fake_vidu import FakeVidu

    with FakeVidu(api_key="vidu-secret") as fake:
        yield fake


@pytest.fixture(scope="module")
def upstream_gw(tmp_path_factory: pytest.TempPathFactory, fake_vidu: Any) -> Iterator[ServedGateway]:
    provider = {"name": "vidu", "protocol": "vidu", "base_url": fake_vidu.base_url, "api_key": "vidu-secret"}
    config = {
        "providers": [provider],
        "models": [
            {"name": name, "price_per_call": PRICE, "routes": [{"provider": "vidu"}]}
            for name in ("audio1.0", "lip-sync")
        ],
        "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5},
    }
    with ServedGateway(Path(tmp_path_factory.mktemp("vidu-upstream")), config=config) as g:
        yield g


@pytest.fixture(scope="module")
def upstream_client(upstream_gw: ServedGateway) -> TaskClient:
    return TaskClient(upstream_gw.base_url, {"Authorization": f"Token {upstream_gw.create_key()}"})


def test_text2audio_and_lip_sync_through_a_vidu_upstream(upstream_client: TaskClient, fake_vidu: Any) -> None:
    fake_vidu.reset()
    bell = {"model": "audio1.0", "prompt": "a bell", "duration": 4, "seed": 7}
    sound = upstream_client.call("POST", "/ent/v2/text2audio", bell)
    lips = upstream_client.call("POST", "/ent/v2/lip-sync", {"video_url": "https://cdn.example.com/face.mp4",
                                "text": "Hello there", "voice_id": "v-1", "payload": "p"})  # fmt: skip
    assert sound.status == 200 and lips.status == 200, (sound.body, lips.body)
    assert sound.json()["seed"] == 7 and sound.json()["credits"] == PRICE
    sent = {c.json.get("prompt", "lip-sync"): c for c in fake_vidu.submits()}
    assert sent["a bell"].headers["authorization"] == "Token vidu-secret"
    assert sent["a bell"].json == {
        "model": "audio1.0",
        "prompt": "a bell",
        "duration": 4,
        "seed": 7,
        "payload": "",
    }
    assert "model" not in sent["lip-sync"].json and sent["lip-sync"].json["voice_id"] == "v-1"
    for res, suffix in ((sound, ".mp3"), (lips, ".mp4")):
        done, states = _finish(upstream_client, res.json()["task_id"])
        assert done["state"] == "success" and (res is lips or "processing" in states), (done, states)
        [creation] = done["creations"]
        assert creation["url"].startswith(fake_vidu.root + "/files/") and creation["url"].endswith(suffix)
        assert http("GET", creation["url"]).status == 200
    lipped = upstream_client.get_json(f"/ent/v2/tasks/{lips.json()['task_id']}/creations")
    assert lipped["payload"] == "p" and lipped["creations"][0]["cover_url"].endswith(".jpeg")


def test_an_upstream_failure_is_failed_with_its_code_and_refunded_once(
    upstream_gw: ServedGateway, upstream_client: TaskClient, fake_vidu: Any
) -> None:
    fake_vidu.reset(script="fail", fail_reason="CreationPolicyViolation")
    res = upstream_client.call("POST", "/ent/v2/text2audio", {"model": "audio1.0", "prompt": "a scream"})
    assert res.status == 200, res.body
    done, _ = _finish(upstream_client, res.json()["task_id"])
    assert (
        done["state"] == "failed"
        and done["err_code"] == "CreationPolicyViolation"
        and done["creations"] == []
    )
    time.sleep(0.5)  # later polls must not refund again
    ledger = upstream_gw.admin("GET", f"/admin/tasks/{done['id']}").json()["ledger"]
    assert sorted((e["kind"], e["amount"]) for e in ledger) == [("refund", PRICE), ("reserve", PRICE)]
    fake_vidu.reset(submit_reject=True)
    refused = upstream_client.call("POST", "/ent/v2/text2audio", {"model": "audio1.0", "prompt": "x"})
    assert refused.status == 400 and set(refused.json()) == ERROR_KEYS, refused.body


# The README's curl examples, run as written (against this gateway's address).
[README_SUBMIT, README_QUERY] = [
    command
    for block in code_blocks(section("Sound effects, lip sync and visual tools"), "sh")
    for command in shell_commands(block)
    if "/ent/v2/" in command
]


def _sh(gw: ServedGateway, command: str, **env: str) -> dict[str, Any]:
    command = command.replace("http://127.0.0.1:8000", gw.base_url)
    done = subprocess.run(["bash", "-c", command], capture_output=True, env={**os.environ, **env}, timeout=30)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl command")
def test_the_readme_curl_example(gw: ServedGateway, key_record: dict[str, Any]) -> None:
    key = key_record["key"]
    created = _sh(gw, README_SUBMIT, KEY=key)
    assert created["state"] == "created" and created["duration"] == 5
    done = poll_until(lambda: _sh(gw, README_QUERY, KEY=key, TASK_ID=created["task_id"]),
                      lambda d: d["state"], ("success", "failed")).final  # fmt: skip
    assert done["state"] == "success" and done["creations"][0]["url"].endswith(".mp3")
