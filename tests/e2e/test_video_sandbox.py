"""The video families through the sandbox, against the real server process: the real `openai`
SDK's `videos` client (create_and_poll, retrieve, list, download_content, remix, delete),
plain HTTP for the unified `/v1/video/generations`, Kling's native paths and Veo's
`predictLongRunning` operations. Every video is downloaded and decoded with PyAV."""

from __future__ import annotations

import base64
import io
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from PIL import Image

from tests.support.media_fixtures import make_image
from tests.support.net import HTTPResult, http
from tests.support.receiver import WebhookReceiver
from tests.support.served import ServedGateway
from tests.support.video import decode_video, sandbox_config, wait_for

PRICE = 0.25
FAIL = "[sandbox:fail] a storm"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    config = sandbox_config(1.5, tasks={"poll_interval": 0.2, "max_poll_interval": 0.5})
    config["models"].append(
        {"name": "priced-video", "price_per_call": PRICE, "routes": [{"provider": "sandbox"}]}
    )
    env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
    with ServedGateway(Path(tmp_path_factory.mktemp("video-sandbox")), config=config, env=env) as g:
        yield g


@pytest.fixture(scope="module")
def key_record(gw: ServedGateway) -> dict[str, Any]:
    return gw.create_key_record()


@pytest.fixture(scope="module")
def key(key_record: dict[str, Any]) -> str:
    return str(key_record["key"])


@pytest.fixture(scope="module")
def client(gw: ServedGateway, key: str) -> Iterator[openai.OpenAI]:
    # Closed here: a module-scoped client outlives the per-test closing of SDK clients, and one
    # finalized by the cycle collector may drop its pooled socket unclosed (a ResourceWarning).
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0) as client:
        yield client


@pytest.fixture(autouse=True)
def _no_sora_deprecation_noise() -> Iterator[None]:
    # The SDK marks the videos client deprecated (OpenAI's own Sora API closed); the wire
    # format is what unigate serves, so the warning is expected here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# --- OpenAI videos ----------------------------------------------------------------------


def test_create_and_poll_then_download_every_variant(client: openai.OpenAI) -> None:
    video = client.videos.create_and_poll(
        prompt="a lighthouse at dusk", model="sora-2", seconds="4", size="720x1280"
    )
    assert video.status == "completed" and video.progress == 100
    assert video.object == "video" and video.model == "sora-2"
    assert video.seconds == "4" and video.size == "720x1280" and video.prompt == "a lighthouse at dusk"
    assert video.completed_at is not None and video.completed_at >= video.created_at
    assert video.expires_at is not None and video.expires_at > video.completed_at
    assert video.error is None and video.remixed_from_video_id is None

    content = client.videos.download_content(video.id)
    decoded = decode_video(content.read())
    assert (decoded.codec, decoded.width, decoded.height) == ("h264", 720, 1280)
    assert abs(decoded.seconds - 4.0) < 0.1

    thumb = client.videos.download_content(video.id, variant="thumbnail")
    assert thumb.response.headers["content-type"] == "image/webp"
    assert Image.open(io.BytesIO(thumb.read())).size == (720, 1280)
    sprite = client.videos.download_content(video.id, variant="spritesheet")
    assert sprite.response.headers["content-type"] == "image/jpeg"
    assert Image.open(io.BytesIO(sprite.read())).format == "JPEG"


def test_a_video_moves_through_queued_and_in_progress(client: openai.OpenAI) -> None:
    video = client.videos.create(prompt="waves", model="sandbox-video", seconds="2", size="320x240")
    assert video.status == "queued" and video.progress == 0
    seen = {video.status}
    progress = []
    while video.status not in ("completed", "failed"):
        time.sleep(0.2)
        video = client.videos.retrieve(video.id)
        seen.add(video.status)
        progress.append(video.progress)
    assert seen == {"queued", "in_progress", "completed"}
    assert progress == sorted(progress) and any(0 < p < 100 for p in progress)


def test_input_reference_starts_the_video_from_the_image(client: openai.OpenAI) -> None:
    png = make_image(320, 240, "png", color=(200, 30, 30))
    video = client.videos.create_and_poll(
        prompt="the red card flies away", model="sandbox-video", seconds="2", size="320x240",
        input_reference=("card.png", png, "image/png"),
    )  # fmt: skip
    assert video.status == "completed"
    first = _first_frame(client.videos.download_content(video.id).read())
    assert first.getpixel((8, 8))[0] > 150  # the corner is still the red image


def test_list_pages_through_only_the_callers_videos(gw: ServedGateway, client: openai.OpenAI) -> None:
    other = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
    ids = [
        other.videos.create(prompt=f"clip {i}", model="sandbox-video", seconds="1", size="128x128").id
        for i in range(3)
    ]
    first = other.videos.list(limit=2, order="asc")
    assert [v.id for v in first.data] == ids[:2] and first.has_more
    second = other.videos.list(limit=2, order="asc", after=first.data[-1].id)
    assert [v.id for v in second.data] == ids[2:] and not second.has_more
    assert [v.id for v in other.videos.list(order="desc").data] == ids[::-1]
    assert [v.id for v in other.videos.list(limit=100)] == ids[::-1]  # the SDK's auto-paging
    assert not set(ids) & {v.id for v in client.videos.list(limit=100).data}


def test_remix_makes_a_new_video_from_a_finished_one(client: openai.OpenAI) -> None:
    source = client.videos.create_and_poll(prompt="a cat", model="sandbox-video", seconds="1", size="256x256")
    remix = client.videos.remix(source.id, prompt="a cat in the snow")
    assert remix.id != source.id and remix.remixed_from_video_id == source.id
    assert remix.prompt == "a cat in the snow" and remix.status == "queued"
    done = client.videos.poll(remix.id)
    assert done.status == "completed"
    assert decode_video(client.videos.download_content(done.id).read()).width == 256


def test_delete_removes_a_finished_video_only(client: openai.OpenAI) -> None:
    running = client.videos.create(prompt="slow", model="sandbox-video", seconds="1", size="128x128")
    with pytest.raises(openai.BadRequestError):
        client.videos.delete(running.id)
    client.videos.poll(running.id)
    deleted = client.videos.delete(running.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (running.id, "video.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.videos.retrieve(running.id)
    with pytest.raises(openai.NotFoundError):
        client.videos.download_content(running.id)


def test_a_failed_video_reports_its_error_and_is_refunded_once(
    gw: ServedGateway, client: openai.OpenAI
) -> None:
    video = client.videos.create_and_poll(prompt=FAIL, model="priced-video", seconds="1", size="128x128")
    assert video.status == "failed" and video.progress == 100
    assert video.error is not None and video.error.code == "sandbox_failure"
    assert "asked to fail" in video.error.message
    with pytest.raises(openai.NotFoundError):
        client.videos.download_content(video.id)
    ledger = gw.admin("GET", f"/admin/tasks/{video.id}").json()["ledger"]
    assert sorted((e["kind"], e["amount"]) for e in ledger) == [("refund", PRICE), ("reserve", PRICE)]


def test_a_video_is_invisible_to_other_keys_and_other_families(
    gw: ServedGateway, client: openai.OpenAI, key: str
) -> None:
    video = client.videos.create(prompt="mine", model="sandbox-video", seconds="1", size="128x128")
    stranger = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
    with pytest.raises(openai.NotFoundError):
        stranger.videos.retrieve(video.id)
    for path in (
        f"/v1/video/generations/{video.id}",
        f"/kling/v1/videos/text2video/{video.id}",
        f"/v1beta/models/sandbox-video/operations/{video.id}",
        f"/suno/fetch/{video.id}",
        f"/ent/v2/tasks/{video.id}/creations",
    ):
        assert http("GET", gw.base_url + path, headers=_auth(key)).status == 404, path


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "sora-2", "seconds": "4"}, "prompt"),
        ({"prompt": "x", "seconds": "0"}, "seconds"),
        ({"prompt": "x", "seconds": "four"}, "seconds"),
        ({"prompt": "x", "size": "big"}, "size"),
        ({"prompt": "x", "seconds": "30"}, "seconds"),  # the sandbox makes at most 20 s
    ],
)
def test_bad_video_requests_get_openai_400s(
    gw: ServedGateway, key: str, body: dict[str, Any], param: str
) -> None:
    res = http("POST", gw.base_url + "/v1/videos", body, _auth(key))
    assert res.status == 400, res.body
    error = res.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param, error


def test_a_non_image_reference_and_an_unknown_model_are_refused(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as bad:
        client.videos.create(
            prompt="x", model="sandbox-video", input_reference=("a.png", b"not an image", "image/png")
        )
    assert bad.value.code == "invalid_image_format"
    with pytest.raises(openai.NotFoundError):
        client.videos.create(prompt="x", model="no-such-video-model")


# --- unified /v1/video/generations -------------------------------------------------------


def _unified(gw: ServedGateway, key: str, task_id: str) -> dict[str, Any]:
    res = http("GET", f"{gw.base_url}/v1/video/generations/{task_id}", headers=_auth(key))
    assert res.status == 200, res.body
    return dict(res.json())


def test_unified_generation_reaches_a_url_with_the_requested_video(gw: ServedGateway, key: str) -> None:
    body = {"model": "sandbox-video", "prompt": "a red kite", "duration": 2, "width": 320, "height": 240,
            "fps": 12, "seed": 7, "metadata": {"style": "watercolor"}}  # fmt: skip
    res = http("POST", gw.base_url + "/v1/video/generations", body, _auth(key))
    assert res.status == 200, res.body
    created = res.json()
    assert created["id"] == created["task_id"] and created["status"] == "queued"
    assert created["url"] is None and created["error"] is None
    done = wait_for(
        lambda: _unified(gw, key, created["id"]), lambda r: r["status"] in ("completed", "failed")
    )
    assert done["status"] == "completed" and done["progress"] == 100
    assert (
        done["metadata"]["width"] == 320
        and done["metadata"]["height"] == 240
        and done["metadata"]["seed"] == 7
    )
    video = http("GET", done["url"])
    assert video.status == 200 and video.headers["content-type"] == "video/mp4"
    decoded = decode_video(video.body)
    assert (decoded.width, decoded.height, decoded.frames) == (320, 240, 24)


def test_unified_failure_and_bad_input(gw: ServedGateway, key: str) -> None:
    res = http(
        "POST", gw.base_url + "/v1/video/generations", {"model": "sandbox-video", "prompt": FAIL}, _auth(key)
    )
    failed = wait_for(
        lambda: _unified(gw, key, res.json()["id"]), lambda r: r["status"] in ("completed", "failed")
    )
    assert failed["status"] == "failed" and failed["url"] is None
    assert failed["error"]["code"] == "sandbox_failure" and failed["error"]["message"]
    for body, param in (
        ({"prompt": "no model"}, "model"),
        ({"model": "sandbox-video"}, "prompt"),
        ({"model": "sandbox-video", "prompt": "x", "duration": -1}, "duration"),
        ({"model": "sandbox-video", "prompt": "x", "width": 320}, "width"),
        ({"model": "sandbox-video", "prompt": "x", "metadata": "style"}, "metadata"),
    ):
        bad = http("POST", gw.base_url + "/v1/video/generations", body, _auth(key))
        assert bad.status == 400 and bad.json()["error"]["param"] == param, (body, bad.body)


# --- Kling native ------------------------------------------------------------------------


def _kling(gw: ServedGateway, key: str, path: str, body: dict[str, Any] | None = None) -> HTTPResult:
    return http(
        "POST" if body is not None else "GET", gw.base_url + "/kling/v1/videos/" + path, body, _auth(key)
    )


def test_kling_text2video_in_klings_envelope_with_a_signed_callback(
    gw: ServedGateway, key: str, key_record: dict[str, Any]
) -> None:
    with WebhookReceiver(secret=key_record["webhook_secret"]) as receiver:
        body = {"prompt": "a fox in the snow", "duration": "5", "aspect_ratio": "9:16",
                "external_task_id": "order-17", "callback_url": receiver.url}  # fmt: skip
        res = _kling(gw, key, "text2video", body)
        assert res.status == 200, res.body
        envelope = res.json()
        assert envelope["code"] == 0 and envelope["message"] == "SUCCEED" and envelope["request_id"]
        data = envelope["data"]
        assert data["task_status"] == "submitted" and data["task_info"] == {"external_task_id": "order-17"}
        assert len(str(data["created_at"])) == 13  # milliseconds
        done = wait_for(
            lambda: _kling(gw, key, f"text2video/{data['task_id']}").json()["data"],
            lambda d: d["task_status"] in ("succeed", "failed"),
        )
        assert done["task_status"] == "succeed" and done["task_status_msg"] == ""
        [video] = done["task_result"]["videos"]
        assert video["duration"] == "5"
        decoded = decode_video(http("GET", video["url"]).body)
        assert (decoded.width, decoded.height) == (720, 1280) and abs(decoded.seconds - 5) < 0.1
        # The client's own id finds the task too.
        assert _kling(gw, key, "text2video/order-17").json()["data"]["task_id"] == data["task_id"]
        assert _kling(gw, key, f"image2video/{data['task_id']}").status == 404
        # Callbacks: signed, one per change, the last one the finished task.
        wait_for(lambda: {"n": len(receiver.snapshot())}, lambda _: any(
            d.body["task_status"] == "succeed" for d in receiver.snapshot()))  # fmt: skip
        deliveries = receiver.snapshot()
        assert all(d.valid_signature for d in deliveries)
        assert [d.body["task_status"] for d in deliveries][-1] == "succeed"
        assert {d.body["task_id"] for d in deliveries} == {data["task_id"]}


def test_kling_image2video_and_klings_errors(gw: ServedGateway, key: str) -> None:
    image = base64.b64encode(make_image(256, 256, "jpeg")).decode()
    res = _kling(gw, key, "image2video", {"model_name": "kling-v1-6", "image": image, "duration": 5})
    assert res.status == 200, res.body
    task_id = res.json()["data"]["task_id"]
    done = wait_for(lambda: _kling(gw, key, f"image2video/{task_id}").json()["data"],
                    lambda d: d["task_status"] in ("succeed", "failed"))  # fmt: skip
    assert done["task_status"] == "succeed"
    for path, body, code in (
        ("text2video", {"duration": "5"}, 1201),  # no prompt
        ("image2video", {"prompt": "x"}, 1201),  # no image
        ("text2video", {"prompt": "x", "duration": "7"}, 1201),
        ("text2video", {"prompt": "x", "model_name": "kling-v9"}, 1203),
        ("image2video", {"image": base64.b64encode(b"not an image").decode()}, 1201),
    ):
        bad = _kling(gw, key, path, body)
        assert 400 <= bad.status < 500 and bad.json()["code"] == code, (body, bad.body)
        assert set(bad.json()) == {"code", "message", "request_id"}
    dup = _kling(gw, key, "text2video", {"prompt": "x", "external_task_id": "dup-1"})
    assert dup.status == 200
    assert _kling(gw, key, "text2video", {"prompt": "y", "external_task_id": "dup-1"}).json()["code"] == 1201
    unauthorized = http("GET", gw.base_url + f"/kling/v1/videos/text2video/{task_id}")
    assert unauthorized.status == 401 and unauthorized.json()["code"] == 1001


# --- Veo (Gemini API operations) ---------------------------------------------------------


def test_veo_operation_done_and_the_uri_downloads_with_the_callers_key(gw: ServedGateway, key: str) -> None:
    model = "veo-3.0-generate-001"
    goog = {"x-goog-api-key": key}
    body = {
        "instances": [{"prompt": "a paper boat"}],
        "parameters": {"aspectRatio": "16:9", "durationSeconds": 2},
    }
    res = http("POST", f"{gw.base_url}/v1beta/models/{model}:predictLongRunning", body, goog)
    assert res.status == 200, res.body
    name = res.json()["name"]
    assert name.startswith(f"models/{model}/operations/")
    op = wait_for(
        lambda: http("GET", f"{gw.base_url}/v1beta/{name}", headers=goog).json(), lambda o: o.get("done")
    )
    [sample] = op["response"]["generateVideoResponse"]["generatedSamples"]
    uri = sample["video"]["uri"]
    assert uri.startswith(gw.base_url + "/v1beta/files/")
    assert http("GET", uri).status == 401  # the caller's key is required
    assert http("GET", uri + f"&key={key}").status == 200
    video = http("GET", uri, headers=goog)
    decoded = decode_video(video.body)
    assert (decoded.width, decoded.height) == (1280, 720) and abs(decoded.seconds - 2) < 0.1
    # Another key sees neither the operation nor the file.
    other = {"x-goog-api-key": gw.create_key()}
    assert http("GET", f"{gw.base_url}/v1beta/{name}", headers=other).status == 404
    assert http("GET", uri, headers=other).status == 404


def test_veo_failure_and_bad_input_in_googles_shape(gw: ServedGateway, key: str) -> None:
    goog = {"x-goog-api-key": key}
    url = f"{gw.base_url}/v1beta/models/veo-2.0-generate-001:predictLongRunning"
    name = http(
        "POST", url, {"instances": [{"prompt": FAIL}], "parameters": {"durationSeconds": 1}}, goog
    ).json()["name"]
    op = wait_for(
        lambda: http("GET", f"{gw.base_url}/v1beta/{name}", headers=goog).json(), lambda o: o.get("done")
    )
    assert "response" not in op and op["error"]["message"]
    for body in (
        {},
        {"instances": []},
        {"instances": [{"prompt": "x"}], "parameters": {"aspectRatio": "4:3"}},
    ):
        bad = http("POST", url, body, goog)
        assert bad.status == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT", bad.body


def _first_frame(data: bytes) -> Image.Image:
    import av

    with av.open(io.BytesIO(data)) as container:
        frame = next(container.decode(video=0))
        return frame.to_image()
