"""The music family (`/suno/*`) against the real server and its sandbox upstream: the exact
submit record of spec §2-§4.1, the task lifecycle to SUCCESS and FAILURE, served media,
lyrics, audio upload and continuation, batch fetch, owner scoping, and every error in the
music envelope (never a 500)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.music import (
    PNG_SIGNATURE,
    TASK_FIELDS,
    URL_FIELDS,
    FileServer,
    MusicClient,
    assert_error_envelope,
    assert_fields,
    assert_music_task_shape,
    file_server,
    is_uuid,
    make_float_wav,
    make_wav,
    multipart_body,
    parse_iso_utc,
    poll_until_terminal,
    progress_value,
    wav_seconds,
)
from tests.support.net import http
from tests.support.served import ServedGateway

MUSIC_SECONDS = 3.0
CONFIG: dict[str, Any] = {
    "providers": [{"name": "sandbox", "protocol": "sandbox"}],
    "models": [
        {"name": "chirp-v4", "routes": [{"provider": "sandbox"}]},
        {"name": "chirp-v3-5", "routes": [{"provider": "sandbox"}]},
    ],
    "sandbox": {"music_seconds": MUSIC_SECONDS},
    "tasks": {"poll_interval": 0.3},
}
STATUS_ORDER = {"SUBMITTED": 0, "QUEUED": 1, "IN_PROGRESS": 2, "SUCCESS": 3, "FAILURE": 3}
CLIP_STATUS_OF = {"SUBMITTED": "submitted", "QUEUED": "queued", "IN_PROGRESS": "streaming"}

MUSIC_REQUEST: dict[str, Any] = {
    "prompt": "[Verse]\nNeon rivers under midnight rain\nWe keep the city lights awake\n"
    "[Chorus]\nRunning, running through the glow",
    "mv": "chirp-v4",
    "title": "Neon Rivers",
    "tags": "synthwave, dreamy, female vocals",
}
DESCRIPTION_REQUEST: dict[str, Any] = {
    "gpt_description_prompt": "a calm solo piano piece for a rainy morning",
    "make_instrumental": True,
}
FAIL_REQUEST: dict[str, Any] = {
    "prompt": "[sandbox:fail] this one must fail",
    "mv": "chirp-v4",
    "title": "Doomed",
}
LYRICS_REQUEST: dict[str, Any] = {"prompt": "a song about lighthouses and the sea at night"}
UPLOADED_WAV = make_wav(seconds=2.0, freq=330.0)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    """A fast sandbox gateway (music tasks finish in ~3 s), private addresses refused."""
    with ServedGateway(tmp_path_factory.mktemp("music"), config=CONFIG) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def client(gw: ServedGateway) -> MusicClient:
    return MusicClient(gw.base_url, gw.create_key(name="music-owner"))


@pytest.fixture(scope="module")
def other_client(gw: ServedGateway) -> MusicClient:
    return MusicClient(gw.base_url, gw.create_key(name="music-other"))


@pytest.fixture(scope="module")
def wav_server() -> Iterator[FileServer]:
    with file_server({"/x.wav": UPLOADED_WAV}) as server:
        yield server


@pytest.fixture(scope="module")
def private_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    """The same gateway, but the operator allows private (loopback) URLs and hooks."""
    env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
    with ServedGateway(tmp_path_factory.mktemp("music-private"), config=CONFIG, env=env) as gateway:
        yield gateway


@dataclass
class Run:
    """One submitted task: the submit answer, when it was sent, every fetch seen, the end."""

    submitted: dict[str, Any]
    sent_at: float
    answered_at: float
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, Any] = field(default_factory=dict)

    @property
    def task_id(self) -> str:
        return str(self.submitted["task_id"])


def _submit_run(client: MusicClient, body: dict[str, Any], path: str = "/suno/submit/music") -> Run:
    sent = time.time()
    task = client.submit(body, path)
    return Run(task, sent, time.time())


def _upload_run(client: MusicClient, data: bytes) -> Run:
    sent = time.time()
    res = client.upload(data, "my take.wav")
    assert res.status == 200, res.body
    envelope = res.json()
    assert envelope["code"] == "success" and envelope["message"] == ""
    return Run(envelope["data"], sent, time.time())


def _finish(client: MusicClient, runs: dict[str, Run]) -> dict[str, Run]:
    by_id = {run.task_id: run for run in runs.values()}
    finals = poll_until_terminal(
        client, list(by_id), timeout=20.0, on_snapshot=lambda tid, task: by_id[tid].snapshots.append(task)
    )
    for task_id, task in finals.items():
        by_id[task_id].final = task
    return runs


@pytest.fixture(scope="module")
def first_wave(client: MusicClient) -> dict[str, Run]:
    """Music, description-mode music, a failing task, lyrics and an upload, run together."""
    runs = {
        "music": _submit_run(client, MUSIC_REQUEST),
        "describe": _submit_run(client, DESCRIPTION_REQUEST),
        "fail": _submit_run(client, FAIL_REQUEST),
        "lyrics": _submit_run(client, LYRICS_REQUEST, "/suno/submit/lyrics"),
        "upload": _upload_run(client, UPLOADED_WAV),
    }
    return _finish(client, runs)


@pytest.fixture(scope="module")
def second_wave(client: MusicClient, first_wave: dict[str, Run]) -> dict[str, Run]:
    """Continuations of the uploaded clip and of a finished music clip."""
    uploaded_clip = first_wave["upload"].final["data"][0]["id"]
    music_clip = first_wave["music"].final["data"][1]["id"]
    runs = {
        "extend_upload": _submit_run(
            client,
            {
                "prompt": "[Verse]\nAnd the tape rolls on",
                "title": "Take Two",
                "tags": "lofi",
                "task": "extend",
                "continue_clip_id": uploaded_clip,
                "continue_at": 1,
            },
        ),
        "extend_music": _submit_run(
            client,
            {
                "prompt": "[Bridge]\nThe rivers turn to light",
                "mv": "chirp-v4",
                "title": "Neon Rivers (Extended)",
                "tags": "synthwave",
                "task": "extend",
                "continue_clip_id": music_clip,
                "continue_at": 2,
            },
        ),
    }
    return _finish(client, runs)


def _download(url: str) -> tuple[str, bytes]:
    res = http("GET", url)  # no Authorization: media links work in plain players
    assert res.status == 200, f"{url}: {res.status}"
    return res.headers.get("content-type", ""), res.body


def _assert_media_url(url: str, gw: ServedGateway, suffix: str) -> None:
    assert url.startswith(gw.base_url + "/media/"), url
    assert url.endswith(suffix), url


# --------------------------------------------------------------------------- submit record


def test_submit_music_returns_the_exact_submitted_record(first_wave: dict[str, Run], client: MusicClient):
    run = first_wave["music"]
    task = run.submitted
    assert_music_task_shape(task, metadata_extras=False)

    assert is_uuid(task["task_id"])
    assert task["action"] == "MUSIC"
    assert task["status"] == "SUBMITTED"
    assert task["progress"] == "0%"
    assert task["finish_time"] == 0
    assert task["start_time"] == task["submit_time"], "spec §2.1: same form as submit_time"
    assert len(str(task["submit_time"])) == 10
    assert int(run.sent_at) - 1 <= task["submit_time"] <= run.answered_at + 1
    assert task["notify_hook"] == ""
    for name in ("fail_reason", "error_type", "error_message"):
        assert task[name] == "", name
    for name in (*URL_FIELDS, "major_model_version", "model_name", "prompt", "type", "tags", "created_at"):
        assert task[name] == "", name
    assert task["title"] == "" and task["handle"] == ""
    assert task["duration"] == 0
    assert task["reaction"] is None
    assert task["is_handle_updated"] is False and task["is_trashed"] is False

    clips = task["data"]
    assert len(clips) == 2
    ids = [clip["id"] for clip in clips]
    assert task["search_item"] == ",".join(ids)
    assert all(is_uuid(i) for i in ids) and ids[0] != ids[1]
    for clip in clips:
        assert clip["status"] == "submitted"
        for name in URL_FIELDS:
            assert clip[name] == "", name
        assert clip["title"] == MUSIC_REQUEST["title"]
        assert clip["model_name"] == "chirp-v4"
        assert clip["play_count"] == 0 and clip["upvote_count"] == 0 and clip["flag_count"] == 0
        avatar = http("GET", clip["avatar_image_url"])
        assert avatar.status == 200 and avatar.body.startswith(PNG_SIGNATURE), clip["avatar_image_url"]
        created = parse_iso_utc(clip["created_at"])
        assert run.sent_at - 2 <= created.timestamp() <= run.answered_at + 2
        meta = clip["metadata"]
        assert meta["prompt"] == MUSIC_REQUEST["prompt"]
        assert meta["tags"] == MUSIC_REQUEST["tags"]
        assert meta["task"] == ""
        assert meta["history"] == [] and meta["edited_clip_id"] == ""


def test_submit_echoes_task_field_and_fetch_returns_the_same_task(client: MusicClient):
    body = {**MUSIC_REQUEST, "task": "generate", "title": "Echo Test"}
    task = client.submit(body)
    assert_music_task_shape(task, metadata_extras=False)
    for clip in task["data"]:
        assert clip["metadata"]["task"] == "generate"
        assert clip["title"] == "Echo Test"
    fetched = client.fetch(task["task_id"])
    assert_music_task_shape(fetched)
    assert fetched["task_id"] == task["task_id"]
    assert fetched["search_item"] == task["search_item"]
    assert fetched["submit_time"] == task["submit_time"]


def test_description_mode_without_mv_uses_default_model(first_wave: dict[str, Run]):
    run = first_wave["describe"]
    task = run.submitted
    assert_music_task_shape(task)
    assert task["status"] == "SUBMITTED" and task["action"] == "MUSIC"
    assert len(task["data"]) == 2
    for clip in task["data"]:
        assert clip["model_name"] == "chirp-v4"
        assert clip["metadata"]["prompt"] == ""
        assert clip["metadata"].get("gpt_description_prompt") == DESCRIPTION_REQUEST["gpt_description_prompt"]
    final = run.final
    assert final["status"] == "SUCCESS"
    assert final["model_name"] == "chirp-v4"
    assert all(clip["model_name"] == "chirp-v4" for clip in final["data"])


def test_field_length_limits_are_inclusive(client: MusicClient):
    task = client.submit({"prompt": "p" * 5000, "title": "t" * 200, "tags": "g" * 1000, "mv": "chirp-v3-5"})
    assert task["status"] == "SUBMITTED"
    clip = task["data"][0]
    assert len(clip["metadata"]["prompt"]) == 5000
    assert len(clip["title"]) == 200 and len(clip["metadata"]["tags"]) == 1000
    assert clip["model_name"] == "chirp-v3-5"


# --------------------------------------------------------------------------- lifecycle


def test_music_task_moves_forward_through_running_states(first_wave: dict[str, Run]):
    run = first_wave["music"]
    statuses = [snap["status"] for snap in run.snapshots]
    assert statuses[-1] == "SUCCESS"
    ranks = [STATUS_ORDER[s] for s in statuses]
    assert ranks == sorted(ranks), f"status went backwards: {statuses}"
    running = [snap for snap in run.snapshots if snap["status"] in ("QUEUED", "IN_PROGRESS")]
    assert running, f"never seen running: {statuses}"
    assert any(snap["status"] == "IN_PROGRESS" for snap in running), statuses

    progress = [progress_value(snap) for snap in run.snapshots]
    assert progress == sorted(progress), f"progress went backwards: {progress}"
    assert any(0 < p < 100 for p in progress), progress

    for snap in run.snapshots[:-1]:
        assert_music_task_shape(snap)
        assert snap["task_id"] == run.task_id
        assert snap["search_item"] == run.submitted["search_item"]
        assert snap["finish_time"] == 0
        assert progress_value(snap) < 100
        for clip in snap["data"]:
            assert clip["status"] == CLIP_STATUS_OF[snap["status"]]
            for name in URL_FIELDS:
                assert clip[name] == "", name
        for name in (*URL_FIELDS, "model_name", "major_model_version", "created_at"):
            assert snap[name] == "", name
        if snap["status"] == "IN_PROGRESS":
            assert snap["start_time"] >= snap["submit_time"]


def test_music_task_success_record(first_wave: dict[str, Run], gw: ServedGateway):
    run = first_wave["music"]
    task = run.final
    assert_music_task_shape(task)
    assert task["status"] == "SUCCESS"
    assert task["progress"] == "100%"
    assert task["submit_time"] == run.submitted["submit_time"]
    assert task["start_time"] >= task["submit_time"]
    assert task["finish_time"] >= task["start_time"]
    assert task["finish_time"] <= time.time() + 1
    assert task["search_item"] == run.submitted["search_item"]
    assert task["duration"] > 0
    assert task["model_name"] == "chirp-v4"
    assert task["major_model_version"] == "v4"
    assert task["prompt"] == MUSIC_REQUEST["prompt"]
    assert task["tags"] == MUSIC_REQUEST["tags"]
    assert task["title"] == MUSIC_REQUEST["title"]
    assert task["type"] != ""
    parse_iso_utc(task["created_at"])
    assert task["fail_reason"] == "" and task["error_type"] == "" and task["error_message"] == ""
    _assert_media_url(task["audio_url"], gw, ".wav")
    _assert_media_url(task["image_url"], gw, ".png")

    clips = task["data"]
    assert [clip["id"] for clip in clips] == task["search_item"].split(",")
    for clip in clips:
        assert clip["status"] == "complete"
        assert clip["model_name"] == "chirp-v4" and clip["major_model_version"] == "v4"
        _assert_media_url(clip["audio_url"], gw, ".wav")
        _assert_media_url(clip["image_url"], gw, ".png")
        _assert_media_url(clip["image_large_url"], gw, ".png")
        assert clip["title"] == MUSIC_REQUEST["title"]
        assert clip["metadata"]["prompt"] == MUSIC_REQUEST["prompt"]
    assert task["audio_url"] in {clip["audio_url"] for clip in clips}
    assert task["image_url"] in {clip["image_url"] for clip in clips}


def test_success_media_downloads_without_auth_and_clips_differ(first_wave: dict[str, Run]):
    task = first_wave["music"].final
    audio: list[bytes] = []
    for clip in task["data"]:
        content_type, data = _download(clip["audio_url"])
        assert content_type.startswith("audio/wav")
        assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
        assert wav_seconds(data) > 1.0
        audio.append(data)
        for name in ("image_url", "image_large_url"):
            content_type, image = _download(clip[name])
            assert content_type.startswith("image/png")
            assert image.startswith(PNG_SIGNATURE)
    assert task["data"][0]["id"] != task["data"][1]["id"]
    assert task["data"][0]["audio_url"] != task["data"][1]["audio_url"]
    assert audio[0] != audio[1], "the two clips of a task carry the same audio"


def test_failing_task_ends_in_failure_with_reasons(first_wave: dict[str, Run]):
    run = first_wave["fail"]
    assert run.submitted["status"] == "SUBMITTED"
    task = run.final
    assert_music_task_shape(task)
    assert task["status"] == "FAILURE"
    assert task["progress"] == "100%"
    assert task["finish_time"] >= task["submit_time"] > 0
    for name in ("fail_reason", "error_type", "error_message"):
        assert isinstance(task[name], str) and task[name].strip(), name
    for name in URL_FIELDS:
        assert task[name] == "", name
    assert len(task["data"]) == 2
    for clip in task["data"]:
        assert clip["status"] == "error"
        assert clip["audio_url"] == ""


# --------------------------------------------------------------------------- lyrics


def test_lyrics_task_returns_text_with_sections(first_wave: dict[str, Run]):
    run = first_wave["lyrics"]
    submitted = run.submitted
    assert_fields("lyrics task", submitted, {**TASK_FIELDS, "data": dict})
    assert submitted["action"] == "LYRICS"
    assert submitted["status"] == "SUBMITTED" and submitted["progress"] == "0%"
    assert submitted["finish_time"] == 0

    task = run.final
    assert task["status"] == "SUCCESS" and task["action"] == "LYRICS"
    assert task["progress"] == "100%"
    lyrics = task["data"]
    assert isinstance(lyrics, dict) and {"text", "title", "status"} <= set(lyrics)
    assert "[Verse" in lyrics["text"]
    assert len(lyrics["text"].splitlines()) > 4
    assert isinstance(lyrics["title"], str) and lyrics["title"].strip()
    assert isinstance(lyrics["status"], str) and lyrics["status"]


# --------------------------------------------------------------------------- upload and extend


def test_upload_audio_task_succeeds_with_one_clip(first_wave: dict[str, Run], gw: ServedGateway):
    run = first_wave["upload"]
    submitted = run.submitted
    assert_music_task_shape(submitted)
    assert submitted["action"] == "UPLOAD" and submitted["status"] == "SUBMITTED"
    assert len(submitted["data"]) == 1
    assert submitted["search_item"] == submitted["data"][0]["id"]

    task = run.final
    assert_music_task_shape(task)
    assert task["status"] == "SUCCESS" and task["action"] == "UPLOAD"
    assert len(task["data"]) == 1
    clip = task["data"][0]
    assert clip["id"] == submitted["data"][0]["id"] and is_uuid(clip["id"])
    assert clip["status"] == "complete"
    _assert_media_url(clip["audio_url"], gw, ".wav")
    _, data = _download(clip["audio_url"])
    assert data == UPLOADED_WAV


def test_extend_uploaded_clip(second_wave: dict[str, Run], first_wave: dict[str, Run], gw: ServedGateway):
    _assert_extension(second_wave["extend_upload"], first_wave["upload"].final["data"][0]["id"], 1, gw)


def test_extend_clip_of_finished_music_task(
    second_wave: dict[str, Run], first_wave: dict[str, Run], gw: ServedGateway
):
    _assert_extension(second_wave["extend_music"], first_wave["music"].final["data"][1]["id"], 2, gw)


def _assert_extension(run: Run, source_clip: str, continue_at: int, gw: ServedGateway) -> None:
    for task in (run.submitted, run.final):
        assert_music_task_shape(task)
        assert task["action"] == "MUSIC"
        assert len(task["data"]) == 2
        for clip in task["data"]:
            meta = clip["metadata"]
            assert meta["task"] == "extend"
            assert meta["edited_clip_id"] == source_clip
            assert len(meta["history"]) == 1
            item = meta["history"][0]
            assert item["id"] == source_clip
            assert item["continue_at"] == continue_at
            assert item["infill"] is False
            assert clip["id"] != source_clip
    assert run.submitted["status"] == "SUBMITTED"
    assert run.final["status"] == "SUCCESS", run.final["fail_reason"]
    for clip in run.final["data"]:
        _assert_media_url(clip["audio_url"], gw, ".wav")
        _, data = _download(clip["audio_url"])
        assert wav_seconds(data) > 1.0


def test_continue_clip_id_in_upper_case_finds_the_clip(first_wave: dict[str, Run], client: MusicClient):
    """UUIDs are case-insensitive and the validator accepts upper case, so the clip must be found."""
    clip = first_wave["upload"].final["data"][0]["id"]
    body = {"prompt": "again", "task": "extend", "continue_clip_id": clip.upper(), "continue_at": 1}
    res = client.post("/suno/submit/music", body)
    assert res.status == 200, res.body
    history = res.json()["data"]["data"][0]["metadata"]["history"]
    assert [item["id"].lower() for item in history] == [clip]


def test_extending_an_unreadable_wav_upload_does_not_stall_other_tasks(
    gateway_factory: Callable[..., ServedGateway],
):
    """A float WAV (valid audio the sandbox cannot splice) is uploaded and extended; an
    unrelated task submitted alongside must still finish, and the extension must end."""
    gw = gateway_factory(config=CONFIG)
    client = MusicClient(gw.base_url, gw.create_key(name="float-wav"))
    res = client.upload(make_float_wav(), "studio export.wav")
    assert res.status == 200, res.body
    upload_id = res.json()["data"]["task_id"]
    uploaded = poll_until_terminal(client, [upload_id])[upload_id]
    assert uploaded["status"] == "SUCCESS"
    extend = client.submit(
        {
            "prompt": "[Outro]\nfade away",
            "task": "extend",
            "continue_clip_id": uploaded["data"][0]["id"],
            "continue_at": 1,
        }
    )
    bystander = client.submit({"prompt": "[Verse]\nan innocent bystander", "title": "Bystander"})
    final = poll_until_terminal(client, [bystander["task_id"], extend["task_id"]], timeout=12.0)
    assert final[bystander["task_id"]]["status"] == "SUCCESS"
    assert final[extend["task_id"]]["status"] in ("SUCCESS", "FAILURE")


def test_task_past_its_deadline_fails_with_timeout(gateway_factory: Callable[..., ServedGateway]):
    config = {
        **CONFIG,
        "sandbox": {"music_seconds": 60},
        "tasks": {"poll_interval": 0.3, "deadline_seconds": 1.5},
    }
    gw = gateway_factory(config=config)
    client = MusicClient(gw.base_url, gw.create_key(name="slow"))
    task = client.submit(MUSIC_REQUEST)
    final = poll_until_terminal(client, [task["task_id"]], timeout=10.0)[task["task_id"]]
    assert_music_task_shape(final)
    assert final["status"] == "FAILURE"
    assert final["progress"] == "100%"
    assert final["finish_time"] >= final["submit_time"]
    assert final["error_type"] == "timeout"
    assert final["fail_reason"] and final["error_message"]
    assert final["audio_url"] == ""


def test_continuing_a_running_task_clip_is_a_client_error(client: MusicClient):
    running = client.submit({"prompt": "[Verse]\nnot done yet", "mv": "chirp-v4"})
    res = client.post(
        "/suno/submit/music",
        {"prompt": "more", "task": "extend", "continue_clip_id": running["data"][0]["id"], "continue_at": 1},
    )
    assert_error_envelope(res, 400)


def test_continuing_unknown_clip_is_404(client: MusicClient):
    body = {"prompt": "more", "task": "extend", "continue_clip_id": str(uuid.uuid4()), "continue_at": 1}
    assert_error_envelope(client.post("/suno/submit/music", body), 404)


def test_continuing_another_keys_clip_is_404(first_wave: dict[str, Run], other_client: MusicClient):
    clip = first_wave["music"].final["data"][0]["id"]
    body = {"prompt": "steal", "task": "extend", "continue_clip_id": clip, "continue_at": 1}
    assert_error_envelope(other_client.post("/suno/submit/music", body), 404)
    uploaded = first_wave["upload"].final["data"][0]["id"]
    body = {**body, "continue_clip_id": uploaded}
    assert_error_envelope(other_client.post("/suno/submit/music", body), 404)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("noise.wav", b"this is certainly not audio at all" * 10),
        ("image.png", PNG_SIGNATURE + b"\x00" * 64),
        ("empty.wav", b""),
    ],
)
def test_upload_rejects_non_audio(client: MusicClient, name: str, data: bytes):
    assert_error_envelope(client.upload(data, name), 400)


def test_upload_without_file_field_is_400(client: MusicClient):
    body, content_type = multipart_body({"audio": ("take.wav", UPLOADED_WAV, "audio/wav")}, {"title": "x"})
    res = client.post("/suno/upload/audio", body, {"Content-Type": content_type})
    assert_error_envelope(res, 400)
    body, content_type = multipart_body({}, {"title": "only a field"})
    res = client.post("/suno/upload/audio", body, {"Content-Type": content_type})
    assert_error_envelope(res, 400)


def test_upload_by_loopback_url_is_refused_by_default(client: MusicClient, wav_server: FileServer):
    earlier = len(wav_server.requests)  # the module's other tests share the server
    res = client.post("/suno/upload/audio", {"url": wav_server.base_url + "/x.wav"})
    assert_error_envelope(res, 400, "url_refused")
    port = wav_server.base_url.rsplit(":", 1)[1]
    res = client.post("/suno/upload/audio", {"url": f"http://localhost:{port}/x.wav"})
    assert_error_envelope(res, 400, "url_refused")
    assert wav_server.requests[earlier:] == []


def test_upload_by_url_when_private_addresses_allowed(private_gw: ServedGateway, wav_server: FileServer):
    client = MusicClient(private_gw.base_url, private_gw.create_key(name="private"))
    earlier = len(wav_server.requests)
    res = client.post("/suno/upload/audio", {"url": wav_server.base_url + "/x.wav", "title": "From URL"})
    assert res.status == 200, res.body
    task = res.json()["data"]
    assert task["action"] == "UPLOAD" and task["status"] == "SUBMITTED"
    final = poll_until_terminal(client, [task["task_id"]])[task["task_id"]]
    assert final["status"] == "SUCCESS", final["fail_reason"]
    assert len(final["data"]) == 1
    assert final["data"][0]["title"] == "From URL"
    _, data = _download(final["data"][0]["audio_url"])
    assert data == UPLOADED_WAV
    assert ("GET", "/x.wav") in wav_server.requests[earlier:]


def test_loopback_notify_hook_accepted_and_echoed_when_private_allowed(
    private_gw: ServedGateway, wav_server: FileServer
):
    client = MusicClient(private_gw.base_url, private_gw.create_key(name="hooked"))
    hook = wav_server.base_url + "/hook"
    task = client.submit({**MUSIC_REQUEST, "notify_hook": hook})
    assert task["notify_hook"] == hook
    assert client.fetch(task["task_id"])["notify_hook"] == hook


# --------------------------------------------------------------------------- fetch


def test_batch_fetch_returns_own_tasks_in_request_order(
    first_wave: dict[str, Run], client: MusicClient, other_client: MusicClient
):
    others = other_client.submit({"prompt": "someone else's song"})["task_id"]
    music, fail, lyrics, upload = (first_wave[k].task_id for k in ("music", "fail", "lyrics", "upload"))
    unknown = str(uuid.uuid4())
    ids = [fail, unknown, lyrics, others, music, upload]

    res = client.post("/suno/fetch", {"ids": ids, "action": "MUSIC"})
    assert res.status == 200, res.body
    envelope = res.json()
    assert envelope["code"] == "success" and envelope["message"] == ""
    tasks = envelope["data"]
    assert isinstance(tasks, list)
    got = [t["task_id"] for t in tasks]
    assert lyrics not in got and unknown not in got and others not in got
    assert [i for i in got if i in (fail, music)] == [fail, music]
    for task in tasks:
        assert_music_task_shape(task)
    assert {t["task_id"]: t["status"] for t in tasks}[music] == "SUCCESS"

    everything = client.post("/suno/fetch", {"ids": ids}).json()["data"]
    assert [t["task_id"] for t in everything] == [fail, lyrics, music, upload]

    only_lyrics = client.post("/suno/fetch", {"ids": ids, "action": "LYRICS"}).json()["data"]
    assert [t["task_id"] for t in only_lyrics] == [lyrics]

    theirs = other_client.post("/suno/fetch", {"ids": ids}).json()["data"]
    assert [t["task_id"] for t in theirs] == [others]


def test_batch_fetch_with_no_ids_is_empty_list(client: MusicClient):
    res = client.post("/suno/fetch", {"ids": [], "action": "MUSIC"})
    assert res.status == 200
    assert res.json() == {"code": "success", "message": "", "data": []}


@pytest.mark.parametrize(
    "body",
    [
        {"ids": "x"},
        {"ids": [1, 2]},
        {"ids": None},
        {},
        {"ids": {"a": 1}},
        {"ids": ["a"], "action": 5},
        {"ids": [str(uuid.uuid4()) for _ in range(201)]},
        [],
    ],
    ids=["string", "ints", "null", "missing", "object", "action-int", "too-many", "array-body"],
)
def test_batch_fetch_rejects_wrong_types(client: MusicClient, body: Any):
    assert_error_envelope(client.post("/suno/fetch", body), 400)


def test_fetch_unknown_task_is_404(client: MusicClient):
    for task_id in (str(uuid.uuid4()), "not-a-task", "x" * 300):
        assert_error_envelope(client.get(f"/suno/fetch/{task_id}"), 404, "task_not_exist")


def test_fetch_of_another_keys_task_is_404(first_wave: dict[str, Run], other_client: MusicClient):
    for name in ("music", "lyrics", "upload"):
        res = other_client.get(f"/suno/fetch/{first_wave[name].task_id}")
        assert_error_envelope(res, 404, "task_not_exist")


# --------------------------------------------------------------------------- auth and permissions


def test_missing_key_is_401(gw: ServedGateway):
    anonymous = MusicClient(gw.base_url, None)
    assert_error_envelope(anonymous.post("/suno/submit/music", MUSIC_REQUEST), 401, "missing_api_key")
    assert_error_envelope(anonymous.get(f"/suno/fetch/{uuid.uuid4()}"), 401, "missing_api_key")
    assert_error_envelope(anonymous.post("/suno/fetch", {"ids": []}), 401, "missing_api_key")


@pytest.mark.parametrize("key", ["not-a-key", "ugk_" + "A" * 49])
def test_bad_key_is_401(gw: ServedGateway, key: str):
    bad = MusicClient(gw.base_url, key)
    assert_error_envelope(bad.post("/suno/submit/music", MUSIC_REQUEST), 401, "invalid_api_key")
    assert_error_envelope(bad.post("/suno/submit/lyrics", LYRICS_REQUEST), 401, "invalid_api_key")


def test_revoked_key_is_401(gw: ServedGateway):
    record = gw.create_key_record(name="music-revoked")
    revoked = MusicClient(gw.base_url, record["key"])
    assert revoked.submit(MUSIC_REQUEST)["status"] == "SUBMITTED"
    assert gw.admin("DELETE", f"/admin/keys/{record['id']}").status == 200
    assert_error_envelope(revoked.post("/suno/submit/music", MUSIC_REQUEST), 401)


def test_key_restricted_to_other_model_is_403(gw: ServedGateway):
    limited = MusicClient(gw.base_url, gw.create_key(name="v35-only", models=["chirp-v3-5"]))
    assert_error_envelope(limited.post("/suno/submit/music", MUSIC_REQUEST), 403, "model_not_allowed")
    # Omitting mv means the default model (chirp-v4), which this key may not use either.
    body = {k: v for k, v in MUSIC_REQUEST.items() if k != "mv"}
    assert_error_envelope(limited.post("/suno/submit/music", body), 403, "model_not_allowed")
    allowed = limited.submit({**MUSIC_REQUEST, "mv": "chirp-v3-5"})
    assert allowed["status"] == "SUBMITTED"
    assert all(clip["model_name"] == "chirp-v3-5" for clip in allowed["data"])


def test_key_without_music_family_is_403(gw: ServedGateway):
    text_only = MusicClient(gw.base_url, gw.create_key(name="text-only", families=["text"]))
    for res in (
        text_only.post("/suno/submit/music", MUSIC_REQUEST),
        text_only.post("/suno/submit/lyrics", LYRICS_REQUEST),
        text_only.upload(UPLOADED_WAV),
        text_only.post("/suno/fetch", {"ids": []}),
        text_only.get(f"/suno/fetch/{uuid.uuid4()}"),
    ):
        assert_error_envelope(res, 403, "family_not_allowed")


# --------------------------------------------------------------------------- validation


CLIP = str(uuid.uuid4())


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({**MUSIC_REQUEST, "continue_at": "10", "continue_clip_id": CLIP}, None),
        ({**MUSIC_REQUEST, "continue_at": 1.5, "continue_clip_id": CLIP}, None),
        ({**MUSIC_REQUEST, "continue_at": True, "continue_clip_id": CLIP}, None),
        ({**MUSIC_REQUEST, "continue_at": -1, "continue_clip_id": CLIP}, None),
        ({**MUSIC_REQUEST, "continue_at": 10**30, "continue_clip_id": CLIP}, None),
        ({**MUSIC_REQUEST, "continue_at": 5}, None),
        ({**MUSIC_REQUEST, "continue_clip_id": CLIP}, None),
        ({**MUSIC_REQUEST, "continue_at": 1, "continue_clip_id": "not-a-uuid"}, None),
        ({**MUSIC_REQUEST, "continue_at": 1, "continue_clip_id": CLIP.replace("-", "")}, None),
        ({**MUSIC_REQUEST, "continue_at": 1, "continue_clip_id": 12345}, None),
        ({**MUSIC_REQUEST, "task": "extend"}, None),
        ({"mv": "chirp-v4", "title": "no prompt", "tags": "pop"}, None),
        ({"prompt": "   \n\t ", "gpt_description_prompt": ""}, None),
        ({**MUSIC_REQUEST, "prompt": "p" * 5001}, None),
        ({**MUSIC_REQUEST, "title": "t" * 201}, None),
        ({**MUSIC_REQUEST, "tags": "g" * 1001}, None),
        ({**MUSIC_REQUEST, "mv": "chirp-v99"}, "invalid_mv"),
        ({**MUSIC_REQUEST, "notify_hook": "ftp://example.com/hook"}, None),
        ({**MUSIC_REQUEST, "notify_hook": "http://127.0.0.1/"}, None),
        ({**MUSIC_REQUEST, "notify_hook": "http://localhost:8080/hook"}, None),
        ({**MUSIC_REQUEST, "notify_hook": "http://169.254.169.254/latest"}, None),
        ({**MUSIC_REQUEST, "notify_hook": 42}, None),
        ({"prompt": 123}, None),
        ({**MUSIC_REQUEST, "title": ["a"]}, None),
        ({**MUSIC_REQUEST, "mv": 4}, None),
        ({**MUSIC_REQUEST, "tags": {"a": 1}}, None),
        ({**MUSIC_REQUEST, "make_instrumental": "yes"}, None),
        ({**MUSIC_REQUEST, "prompt": "nul\x00byte"}, None),
    ],
    ids=[
        "continue_at-string",
        "continue_at-float",
        "continue_at-bool",
        "continue_at-negative",
        "continue_at-huge",
        "continue_at-without-clip",
        "clip-without-continue_at",
        "clip-not-uuid",
        "clip-uuid-without-dashes",
        "clip-int",
        "extend-without-clip",
        "no-prompt",
        "blank-prompt",
        "prompt-too-long",
        "title-too-long",
        "tags-too-long",
        "unknown-mv",
        "hook-ftp",
        "hook-loopback",
        "hook-localhost",
        "hook-metadata",
        "hook-int",
        "prompt-int",
        "title-list",
        "mv-int",
        "tags-object",
        "instrumental-string",
        "prompt-nul",
    ],
)
def test_invalid_music_submit_is_400(client: MusicClient, body: dict[str, Any], code: str | None):
    assert_error_envelope(client.post("/suno/submit/music", body), 400, code)


@pytest.mark.parametrize(
    ("path", "body", "content_type", "status"),
    [
        ("/suno/submit/music", b'{"prompt": "a",', "application/json", 400),
        ("/suno/submit/music", b"", "application/json", 400),
        ("/suno/submit/music", b"[]", "application/json", 400),
        ("/suno/submit/music", b'"x"', "application/json", 400),
        ("/suno/submit/music", b"null", "application/json", 400),
        ("/suno/submit/music", b"\xff\xfe\xfa", "application/json", 400),
        ("/suno/submit/music", b'{"prompt": "\\ud800"}', "application/json", 400),
        ("/suno/submit/music", b'{"prompt": "a", "continue_at": 1e999}', "application/json", 400),
        ("/suno/submit/music", b"[" * 5000 + b"]" * 5000, "application/json", 400),
        ("/suno/submit/music", b"prompt=hello", "application/x-www-form-urlencoded", 400),
        ("/suno/submit/lyrics", b"{}", "application/json", 400),
        ("/suno/submit/lyrics", b'{"prompt": 5}', "application/json", 400),
        ("/suno/submit/lyrics", b'{"prompt": ""}', "application/json", 400),
        ("/suno/submit/lyrics", b"[]", "application/json", 400),
        ("/suno/upload/audio", b"{}", "application/json", 400),
        ("/suno/upload/audio", b'{"url": 5}', "application/json", 400),
        ("/suno/upload/audio", b'{"url": "ftp://example.com/x.wav"}', "application/json", 400),
        ("/suno/upload/audio", b'{"url": "not a url"}', "application/json", 400),
        ("/suno/upload/audio", b"--x\r\ngarbage", "multipart/form-data", 400),
        ("/suno/upload/audio", b"--x\r\ngarbage", "multipart/form-data; boundary=x", 400),
        ("/suno/upload/audio", b"RIFF....WAVE", "audio/wav", 400),
        ("/suno/fetch", b'{"ids": "x"}', "application/json", 400),
        ("/suno/fetch", b"not json", "application/json", 400),
    ],
)
def test_bad_input_never_500(client: MusicClient, path: str, body: bytes, content_type: str, status: int):
    res = client.post(path, body, {"Content-Type": content_type})
    assert_error_envelope(res, status)


def test_odd_fetch_paths_and_methods_never_500(client: MusicClient):
    for path in ("/suno/fetch/%00", "/suno/fetch/'%20OR%20'1'='1", "/suno/fetch/..%2F..%2Fetc%2Fpasswd"):
        assert_error_envelope(client.get(path), 404)
    res = client.get("/suno/submit/music")
    assert_error_envelope(res, 405)


def test_server_log_has_no_unhandled_errors(gw: ServedGateway, first_wave: dict[str, Run]):
    log = gw.log()
    assert "unhandled error" not in log
    assert "Traceback" not in log
