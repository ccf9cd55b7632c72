"""Success paths schemathesis cannot reach, checked against /openapi.json: finished task
records of every asynchronous family, their files, uploads of real audio and images, and the
admin views of them. Each response is validated by schemathesis' response checks (status,
content type, headers and body schema) for the operation the document describes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from schemathesis import Case
from schemathesis.core.transport import Response

from tests.support.gateway import ADMIN_KEY, GatewayProcess
from tests.support.media_fixtures import encode_tone, make_image, make_mask

pytestmark = pytest.mark.fuzz

CONFIG = {"sandbox": {"enabled": True, "music_seconds": 2, "task_seconds": 1.5}}
Call = Callable[..., Response]


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with GatewayProcess(tmp_path_factory.mktemp("records"), config=CONFIG) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def call(gw: GatewayProcess) -> Call:
    """`call(method, path, key=…, **case)`: one call of a documented operation, validated."""
    schema = schemathesis.openapi.from_url(gw.base_url + "/openapi.json")
    key = gw.create_key(name="records")

    def run(method: str, path: str, *, admin: bool = False, **case: Any) -> Response:
        headers = {"Authorization": f"Bearer {ADMIN_KEY if admin else key}", **case.pop("headers", {})}
        if "body" in case:
            case.setdefault("media_type", "application/json")
        made: Case[Any] = schema[path][method].Case(headers=headers, **case)
        response = made.call(base_url=gw.base_url, allow_redirects=False)
        made.validate_response(response)
        return response

    return run


def _until(fetch: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        record = fetch()
        if done(record) or time.monotonic() > deadline:
            return record
        time.sleep(0.5)


def test_finished_task_records(call: Call) -> None:
    music = call(
        "POST",
        "/suno/submit/music",
        body={"prompt": "[Verse]\nCity lights", "mv": "chirp-v4", "tags": "synth"},
    ).json()["data"]
    lyrics = call("POST", "/suno/submit/lyrics", body={"prompt": "the sea"}).json()["data"]
    video = call("POST", "/v1/videos", body={"prompt": "a kite", "seconds": 1, "size": "64x64"}).json()
    unified = call(
        "POST",
        "/v1/video/generations",
        body={"model": "sandbox-video", "prompt": "a kite", "duration": 1, "width": 64, "height": 64},
    ).json()
    call(
        "POST",
        "/kling/v1/videos/text2video",
        body={"model_name": "kling-v1", "prompt": "a fox", "duration": "5", "external_task_id": "rec-1"},
    ).json()["data"]
    veo = call(
        "POST",
        "/v1beta/models/{model}:predictLongRunning",
        path_parameters={"model": "veo-2.0-generate-001"},
        body={"instances": [{"prompt": "a boat"}], "parameters": {"durationSeconds": 1}},
    ).json()
    sound = call(
        "POST", "/ent/v2/text2audio", body={"model": "audio1.0", "prompt": "rain", "duration": 2}
    ).json()

    def music_task(task_id: str) -> dict[str, Any]:
        found = call("GET", "/suno/fetch/{task_id}", path_parameters={"task_id": task_id}).json()
        return dict(found["data"])

    finished = ("SUCCESS", "FAILURE")
    assert (
        _until(lambda: music_task(music["task_id"]), lambda r: r["status"] in finished)["status"] == "SUCCESS"
    )
    assert (
        _until(lambda: music_task(lyrics["task_id"]), lambda r: r["status"] in finished)["status"]
        == "SUCCESS"
    )
    call("POST", "/suno/fetch", body={"ids": [music["task_id"], lyrics["task_id"]]})
    clip = music_task(music["task_id"])["data"][0]
    audio_name = clip["audio_url"].rsplit("/", 1)[1]
    for method in ("GET", "HEAD"):
        call(method, "/media/{name}", path_parameters={"name": audio_name})

    done = _until(
        lambda: call("GET", "/v1/videos/{video_id}", path_parameters={"video_id": video["id"]}).json(),
        lambda r: r["status"] in ("completed", "failed"),
    )
    assert done["status"] == "completed", done
    for variant in ("video", "thumbnail", "spritesheet"):
        call(
            "GET",
            "/v1/videos/{video_id}/content",
            path_parameters={"video_id": video["id"]},
            query={"variant": variant},
        )
    call("GET", "/v1/videos", query={"limit": 5, "order": "asc"})
    remix = call(
        "POST",
        "/v1/videos/{video_id}/remix",
        path_parameters={"video_id": video["id"]},
        body={"prompt": "storm"},
    )

    assert _until(
        lambda: call(
            "GET", "/v1/video/generations/{task_id}", path_parameters={"task_id": unified["id"]}
        ).json(),
        lambda r: r["status"] in ("completed", "failed"),
    )["url"]
    assert (
        _until(
            lambda: call(
                "GET",
                "/kling/v1/videos/{action}/{task_id}",
                path_parameters={"action": "text2video", "task_id": "rec-1"},
            ).json()["data"],
            lambda r: r["task_status"] in ("succeed", "failed"),
        )["task_status"]
        == "succeed"
    )
    model, _, operation = veo["name"].removeprefix("models/").partition("/operations/")
    op = _until(
        lambda: call(
            "GET",
            "/v1beta/models/{model}/operations/{operation}",
            path_parameters={"model": model, "operation": operation},
        ).json(),
        lambda r: bool(r.get("done")),
    )
    uri = op["response"]["generateVideoResponse"]["generatedSamples"][0]["video"]["uri"]
    name = uri.split("/files/", 1)[1].split(":download", 1)[0]
    call("GET", "/v1beta/files/{name}:download", path_parameters={"name": name}, query={"alt": "media"})
    assert (
        _until(
            lambda: call(
                "GET", "/ent/v2/tasks/{task_id}/creations", path_parameters={"task_id": sound["task_id"]}
            ).json(),
            lambda r: r["state"] in ("success", "failed"),
        )["state"]
        == "success"
    )
    call("GET", "/admin/tasks/{task_id}", admin=True, path_parameters={"task_id": music["task_id"]})
    call("DELETE", "/v1/videos/{video_id}", path_parameters={"video_id": video["id"]})
    assert remix.json()["remixed_from_video_id"] == video["id"]


def test_uploads(call: Call) -> None:
    wav = encode_tone(1.0, "wav")
    png = make_image(64, 64)
    for form in (
        {"response_format": "json"},
        {"response_format": "verbose_json"},
        {"response_format": "srt"},
    ):
        body = {"file": wav, "model": "sandbox-transcribe", **form}
        call("POST", "/v1/audio/transcriptions", body=body, media_type="multipart/form-data")
    call("POST", "/fish/v1/asr", body={"audio": wav}, media_type="multipart/form-data")
    upload = call(
        "POST", "/suno/upload/audio", body={"file": wav, "title": "tone"}, media_type="multipart/form-data"
    )
    assert upload.json()["data"]["action"] == "UPLOAD"
    edit = {
        "image": png,
        "mask": make_mask(64, 64),
        "prompt": "a hat",
        "size": "64x64",
        "response_format": "b64_json",
    }
    call("POST", "/v1/images/edits", body=edit, media_type="multipart/form-data")
    for tool, extra in (("segmentation", {}), ("scale", {"scale_factor": "2"})):
        body = {"image_file": png, "sync": "1", **extra}
        created = call(
            "POST",
            "/api/tasks/visual/{tool}",
            path_parameters={"tool": tool},
            body=body,
            media_type="multipart/form-data",
        ).json()["data"]
        assert created["state"] == 1, created
        call(
            "GET",
            "/api/tasks/visual/{tool}/{task_id}",
            path_parameters={"tool": tool, "task_id": created["task_id"]},
        )
    call(
        "POST",
        "/v1/audio/speech",
        body={"model": "sandbox-tts", "input": "hi", "voice": "alloy", "stream_format": "sse"},
    )
    call(
        "POST",
        "/v1/chat/completions",
        body={
            "model": "sandbox-chat",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    call("GET", "/admin/keys", admin=True)
    call("GET", "/admin/models", admin=True)
    call("GET", "/admin/providers", admin=True)
