"""The video families against fake vendor upstreams on 127.0.0.1 that speak the vendors'
wire formats: an OpenAI-compatible `/videos` relay (the real `openai` SDK on the client
side), Kling (the fake checks the per-request JWT), Vidu (`Token` auth) and Gemini's Veo
operations (downloads redirect like Google's). Each task reaches success and its file
downloads and decodes; upstream failures surface in each family's own fields and are
refunded once; a route's upstream format is used as it is when it matches the client's."""

from __future__ import annotations

import base64
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.fake_kling import FakeKling
from tests.support.fake_openai_videos import FakeOpenAIVideos
from tests.support.fake_veo import FakeVeo
from tests.support.fake_vidu import FakeVidu
from tests.support.media_fixtures import make_image
from tests.support.net import http
from tests.support.receiver import WebhookReceiver
from tests.support.served import ServedGateway
from tests.support.video import decode_video, wait_for

PRICE = 0.5


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    with FakeOpenAIVideos() as sora, FakeKling() as kling, FakeVidu() as vidu, FakeVeo() as veo:
        yield {"sora": sora, "kling": kling, "vidu": vidu, "veo": veo}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, Any]) -> Iterator[ServedGateway]:
    sora, kling, vidu, veo = fakes["sora"], fakes["kling"], fakes["vidu"], fakes["veo"]
    config = {
        "providers": [
            {"name": "sora-relay", "protocol": "openai", "base_url": sora.base_url, "api_key": sora.api_key},
            {"name": "kling", "protocol": "kling", "base_url": kling.base_url, "api_key": kling.gateway_key},
            {"name": "vidu", "protocol": "vidu", "base_url": vidu.base_url, "api_key": vidu.api_key},
            {"name": "google", "protocol": "gemini", "base_url": veo.base_url, "api_key": veo.api_key},
        ],
        "models": [
            {"name": "sora-2", "price_per_call": PRICE, "routes": [{"provider": "sora-relay"}]},
            {"name": "kling-v1-6", "price_per_call": PRICE, "routes": [{"provider": "kling"}]},
            {"name": "kling-clips", "routes": [{"provider": "kling", "model": "kling-v2-master"}]},
            {"name": "viduq1", "routes": [{"provider": "vidu"}]},
            {"name": "veo-3.0-generate-001", "price_per_call": PRICE, "routes": [{"provider": "google"}]},
        ],
        "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5},
    }
    env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
    with ServedGateway(Path(tmp_path_factory.mktemp("video-upstream")), config=config, env=env) as g:
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
def _reset(fakes: dict[str, Any]) -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the SDK's Sora deprecation notice
        yield
    for fake in fakes.values():
        fake.reset()


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _ledger(gw: ServedGateway, task_id: str) -> list[tuple[str, float]]:
    return sorted(
        (e["kind"], e["amount"]) for e in gw.admin("GET", f"/admin/tasks/{task_id}").json()["ledger"]
    )


# --- OpenAI-compatible /videos relay ------------------------------------------------------


def test_openai_sdk_through_a_videos_relay(
    gw: ServedGateway, client: openai.OpenAI, fakes: dict[str, Any]
) -> None:
    sora: FakeOpenAIVideos = fakes["sora"]
    # The module's other tests share the fake: only what this one sent counts.
    earlier, calls, jobs = len(sora.submits()), len(sora.calls()), len(sora.job_ids())
    video = client.videos.create_and_poll(prompt="a harbour", model="sora-2", seconds="8", size="1280x720")
    assert video.status == "completed" and video.progress == 100 and video.seconds == "8"
    [submit] = sora.submits()[earlier:]
    assert submit.params()["prompt"] == "a harbour" and submit.params()["model"] == "sora-2"
    assert submit.params()["seconds"] == "8" and submit.params()["size"] == "1280x720"
    assert submit.headers["authorization"] == f"Bearer {sora.api_key}"
    # The bytes are the relay's, fetched with the gateway's key (the client never sees it).
    content = client.videos.download_content(video.id).read()
    assert content[4:8] == b"ftyp" and decode_video(content).codec == "h264"
    thumb = client.videos.download_content(video.id, variant="thumbnail")
    assert thumb.response.headers["content-type"] == "image/webp"
    downloads = [c for c in sora.calls()[calls:] if c.kind == "download"]
    assert [c.path.rsplit("=", 1)[-1] for c in downloads] == ["video", "thumbnail"]
    # Remix and delete go to the relay with its own id for the video.
    upstream_id = sora.job_ids()[jobs]
    remix = client.videos.remix(video.id, prompt="the harbour at night")
    assert remix.remixed_from_video_id == video.id and client.videos.poll(remix.id).status == "completed"
    assert sora.calls()[-1].path.startswith("/v1/videos/") and any(
        c.path == f"/v1/videos/{upstream_id}/remix" for c in sora.calls()
    )
    assert client.videos.delete(video.id).deleted
    assert any(c.method == "DELETE" and c.path == f"/v1/videos/{upstream_id}" for c in sora.calls())
    assert _ledger(gw, remix.id) == [("reserve", PRICE)]


def test_an_upstream_video_failure_fails_the_task_and_refunds_once(
    gw: ServedGateway, client: openai.OpenAI, fakes: dict[str, Any]
) -> None:
    fakes["sora"].reset(script="fail", fail_reason="the prompt was refused (fake)")
    video = client.videos.create_and_poll(prompt="forbidden", model="sora-2")
    assert video.status == "failed" and video.error is not None
    assert video.error.message == "the prompt was refused (fake)"
    assert _ledger(gw, video.id) == [("refund", PRICE), ("reserve", PRICE)]


def test_a_rejected_submit_is_relayed_and_never_charged(client: openai.OpenAI, fakes: dict[str, Any]) -> None:
    fakes["sora"].reset(submit_reject=True)
    with pytest.raises(openai.BadRequestError):
        client.videos.create(prompt="nope", model="sora-2")
    assert client.videos.list().data == [] or all(v.prompt != "nope" for v in client.videos.list().data)


# --- Kling ------------------------------------------------------------------------------


def test_kling_native_request_goes_to_kling_as_it_is(
    gw: ServedGateway, key: str, key_record: dict[str, Any], fakes: dict[str, Any]
) -> None:
    kling: FakeKling = fakes["kling"]
    earlier = len(kling.submits())  # the module's other tests share the fake
    with WebhookReceiver(secret=key_record["webhook_secret"]) as receiver:
        camera = {"type": "simple", "config": {"zoom": 5}}
        body = {"model_name": "kling-v1-6", "prompt": "a lantern", "duration": "10", "mode": "pro",
                "camera_control": camera, "callback_url": receiver.url}  # fmt: skip
        res = http("POST", gw.base_url + "/kling/v1/videos/text2video", body, _auth(key))
        assert res.status == 200, res.body
        task_id = res.json()["data"]["task_id"]
        [submit] = kling.submits()[earlier:]
        sent = submit.params()
        assert sent["model_name"] == "kling-v1-6" and sent["camera_control"] == body["camera_control"]
        assert "callback_url" not in sent  # the gateway delivers its own, signed
        assert submit.note == ""  # the fake accepted the JWT
        done = wait_for(
            lambda: http(
                "GET", f"{gw.base_url}/kling/v1/videos/text2video/{task_id}", headers=_auth(key)
            ).json()["data"],
            lambda d: d["task_status"] in ("succeed", "failed"),
        )
        assert done["task_status"] == "succeed"
        [video] = done["task_result"]["videos"]
        assert video["url"].startswith(kling.root + "/files/")  # Kling's public link, relayed
        assert decode_video(http("GET", video["url"]).body).codec == "h264"
        wait_for(lambda: {}, lambda _: any(d.body["task_status"] == "succeed" for d in receiver.snapshot()))
        assert all(d.valid_signature for d in receiver.snapshot())


def test_kling_failure_and_unknown_states(gw: ServedGateway, key: str, fakes: dict[str, Any]) -> None:
    kling: FakeKling = fakes["kling"]
    kling.reset(script="unknown", unknown_stages=3)
    res = http(
        "POST",
        gw.base_url + "/kling/v1/videos/text2video",
        {"model_name": "kling-v1-6", "prompt": "odd"},
        _auth(key),
    )
    odd = res.json()["data"]["task_id"]
    kling.reset(script="fail", fail_reason="content policy (fake)")
    res = http(
        "POST",
        gw.base_url + "/kling/v1/videos/text2video",
        {"model_name": "kling-v1-6", "prompt": "bad"},
        _auth(key),
    )
    bad = res.json()["data"]["task_id"]

    def fetch(task_id: str) -> dict[str, Any]:
        return dict(
            http("GET", f"{gw.base_url}/kling/v1/videos/text2video/{task_id}", headers=_auth(key)).json()[
                "data"
            ]
        )

    failed = wait_for(lambda: fetch(bad), lambda d: d["task_status"] in ("succeed", "failed"))
    assert failed["task_status"] == "failed" and failed["task_status_msg"] == "content policy (fake)"
    assert _ledger(gw, bad) == [("refund", PRICE), ("reserve", PRICE)]
    # An undocumented state shows as the last known one and never ends the task.
    finished = wait_for(lambda: fetch(odd), lambda d: d["task_status"] in ("succeed", "failed"))
    assert finished["task_status"] == "succeed"
    assert any(p.stage == "unknown" for p in kling.polls())


def test_unified_and_openai_bodies_reach_kling_rebuilt(
    gw: ServedGateway, key: str, client: openai.OpenAI, fakes: dict[str, Any]
) -> None:
    kling: FakeKling = fakes["kling"]
    body = {"model": "kling-clips", "prompt": "wide shot", "duration": 9, "width": 1280, "height": 720,
            "metadata": {"negative_prompt": "blur", "mode": "pro"}}  # fmt: skip
    created = http("POST", gw.base_url + "/v1/video/generations", body, _auth(key)).json()
    sent = kling.submits()[-1].params()
    assert sent["model_name"] == "kling-v2-master" and sent["duration"] == "10"
    assert sent["aspect_ratio"] == "16:9" and sent["negative_prompt"] == "blur" and sent["mode"] == "pro"
    done = wait_for(
        lambda: http("GET", f"{gw.base_url}/v1/video/generations/{created['id']}", headers=_auth(key)).json(),
        lambda r: r["status"] in ("completed", "failed"),
    )
    assert done["status"] == "completed" and done["url"].startswith(kling.root + "/files/")
    # An OpenAI-format client on a Kling route: the download is a redirect to Kling's link.
    video = client.videos.create_and_poll(prompt="tall shot", model="kling-clips", size="720x1280")
    assert kling.submits()[-1].params()["aspect_ratio"] == "9:16"
    assert client.videos.download_content(video.id).read()[4:8] == b"ftyp"


def test_image2video_sends_kling_raw_base64(gw: ServedGateway, key: str, fakes: dict[str, Any]) -> None:
    png = make_image(64, 64, "png")
    body = {
        "model": "kling-v1-6",
        "prompt": "move",
        "image": "data:image/png;base64," + base64.b64encode(png).decode(),
    }
    created = http("POST", gw.base_url + "/v1/video/generations", body, _auth(key))
    assert created.status == 200, created.body
    submit = fakes["kling"].submits()[-1]
    assert submit.path.endswith("/image2video") and submit.params()["image"] == base64.b64encode(png).decode()


# --- Vidu video -----------------------------------------------------------------------------


def test_unified_video_on_vidu(gw: ServedGateway, key: str, fakes: dict[str, Any]) -> None:
    vidu: FakeVidu = fakes["vidu"]
    body = {"model": "viduq1", "prompt": "a tram", "duration": 4, "seed": 3}
    created = http("POST", gw.base_url + "/v1/video/generations", body, _auth(key)).json()
    submit = vidu.submits()[-1]
    assert submit.path == "/ent/v2/text2video" and submit.headers["authorization"] == f"Token {vidu.api_key}"
    assert submit.params()["model"] == "viduq1" and submit.params()["duration"] == 4
    done = wait_for(
        lambda: http("GET", f"{gw.base_url}/v1/video/generations/{created['id']}", headers=_auth(key)).json(),
        lambda r: r["status"] in ("completed", "failed"),
    )
    assert done["status"] == "completed" and decode_video(http("GET", done["url"]).body).codec == "h264"


# --- Veo ------------------------------------------------------------------------------------


def test_veo_operation_relayed_and_its_file_fetched_with_the_gateways_key(
    gw: ServedGateway, key: str, fakes: dict[str, Any]
) -> None:
    veo: FakeVeo = fakes["veo"]
    earlier = len(veo.downloads())  # the module's other tests share the fake
    goog = {"x-goog-api-key": key}
    body = {"instances": [{"prompt": "a comet"}], "parameters": {"aspectRatio": "16:9", "durationSeconds": 8}}
    res = http("POST", f"{gw.base_url}/v1beta/models/veo-3.0-generate-001:predictLongRunning", body, goog)
    assert res.status == 200, res.body
    name = res.json()["name"]
    submit = veo.submits()[-1]
    assert submit.params() == body and submit.headers["x-goog-api-key"] == veo.api_key
    op = wait_for(
        lambda: http("GET", f"{gw.base_url}/v1beta/{name}", headers=goog).json(), lambda o: o.get("done")
    )
    uri = op["response"]["generateVideoResponse"]["generatedSamples"][0]["video"]["uri"]
    assert uri.startswith(gw.base_url)  # never the upstream's, whose link needs its key
    video = http("GET", uri, headers=goog)
    assert video.status == 200 and decode_video(video.body).codec == "h264"
    downloads = veo.downloads()[earlier:]
    assert downloads and downloads[0].headers.get("x-goog-api-key") == veo.api_key
    assert len(downloads) == 2 and downloads[1].path.startswith("/download-data/")  # the redirect, followed
    assert _ledger(gw, name.rsplit("/", 1)[1]) == [("reserve", PRICE)]


def test_veo_filtered_result_is_a_failure_with_the_reason(
    gw: ServedGateway, key: str, fakes: dict[str, Any]
) -> None:
    fakes["veo"].reset(script="filtered")
    goog = {"x-goog-api-key": key}
    body = {"instances": [{"prompt": "something filtered"}]}
    name = http(
        "POST", f"{gw.base_url}/v1beta/models/veo-3.0-generate-001:predictLongRunning", body, goog
    ).json()["name"]
    op = wait_for(
        lambda: http("GET", f"{gw.base_url}/v1beta/{name}", headers=goog).json(), lambda o: o.get("done")
    )
    assert "response" not in op and op["error"]["message"]
    assert _ledger(gw, name.rsplit("/", 1)[1]) == [("refund", PRICE), ("reserve", PRICE)]
