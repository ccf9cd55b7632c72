"""Every asynchronous family's submits appear in `/admin/usage` (by family and action, with
the price charged), and a refused `notify_hook` / `callback_url` says how to allow private
addresses for local testing."""

from __future__ import annotations

from tests.support.media_fixtures import make_image
from tests.support.net import http
from tests.support.served import ServedGateway
from tests.support.video import wait_for


def test_task_submits_are_in_the_usage_records(sandbox_gateway: ServedGateway) -> None:
    key_record = sandbox_gateway.create_key_record()
    key, key_id = key_record["key"], key_record["id"]
    base, auth = sandbox_gateway.base_url, {"Authorization": f"Bearer {key}"}
    assert (
        http("POST", base + "/suno/submit/music", {"prompt": "[Verse] hi", "mv": "chirp-v4"}, auth).status
        == 200
    )
    video = {"prompt": "a kite", "model": "sandbox-video", "seconds": "1", "size": "128x128"}
    assert http("POST", base + "/v1/videos", video, auth).status == 200
    sfx = {"model": "audio1.0", "prompt": "rain", "duration": 2}
    assert http("POST", base + "/ent/v2/text2audio", sfx, auth).status == 200
    body, boundary = _form(make_image(32, 32, "png")), "b0undary"
    scale = http("POST", base + "/api/tasks/visual/scale", body,
                 {**auth, "Content-Type": f"multipart/form-data; boundary={boundary}"})  # fmt: skip
    assert scale.status == 200, scale.body
    assert http("POST", base + "/v1/videos", {"model": "sandbox-video"}, auth).status == 400  # not accounted
    wanted = {"music.MUSIC", "openai-video.text2video", "vidu.text2audio", "picwish.visual/scale"}

    def endpoints() -> dict[str, object]:
        rows = sandbox_gateway.admin("GET", "/admin/usage").json()["data"]
        return {r["endpoint"]: r for r in rows if r["key_id"] == key_id}

    rows = wait_for(endpoints, lambda found: wanted <= set(found))
    assert rows["openai-video.text2video"]["model"] == "sandbox-video"  # type: ignore[index]


def test_a_refused_hook_says_how_to_allow_private_addresses(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key()
    auth = {"Authorization": f"Bearer {key}"}
    music = http("POST", sandbox_gateway.base_url + "/suno/submit/music",
                 {"prompt": "x", "notify_hook": "http://127.0.0.1:9/hook"}, auth)  # fmt: skip
    assert music.status == 400 and "UNIGATE_ALLOW_PRIVATE_WEBHOOKS=1" in music.json()["message"]
    kling = http("POST", sandbox_gateway.base_url + "/kling/v1/videos/text2video",
                 {"prompt": "x", "callback_url": "http://192.168.1.2/hook"}, auth)  # fmt: skip
    assert kling.status == 400 and "tasks.allow_private_webhooks" in kling.json()["message"]


def _form(png: bytes) -> bytes:
    return (
        b'--b0undary\r\nContent-Disposition: form-data; name="image_file"; filename="a.png"\r\n'
        b"Content-Type: image/png\r\n\r\n" + png + b"\r\n--b0undary--\r\n"
    )
