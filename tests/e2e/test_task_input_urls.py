"""URL inputs the gateway fetches itself (the sandbox's start images, lip-sync video and
audio, PicWish images) go through the same SSRF guard as webhooks and audio uploads: a
loopback, private, link-local or metadata address is refused with a 400 in the family's
shape, before anything is stored or charged."""

from __future__ import annotations

import pytest

from tests.support.net import http
from tests.support.served import ServedGateway

UNSAFE = ("http://127.0.0.1:9/start.png", "http://169.254.169.254/latest/meta-data", "http://10.0.0.8/a.png")


@pytest.mark.parametrize("url", UNSAFE)
def test_unsafe_input_urls_are_refused_in_each_familys_shape(
    sandbox_gateway: ServedGateway, url: str
) -> None:
    key = sandbox_gateway.create_key()
    base = sandbox_gateway.base_url
    auth = {"Authorization": f"Bearer {key}"}

    unified = http(
        "POST", base + "/v1/video/generations", {"model": "sandbox-video", "prompt": "x", "image": url}, auth
    )
    assert unified.status == 400 and unified.json()["error"]["code"] == "url_refused", unified.body

    kling = http("POST", base + "/kling/v1/videos/image2video", {"image": url}, auth)
    assert kling.status == 400 and kling.json()["code"] == 1201, kling.body

    vidu = http(
        "POST",
        base + "/ent/v2/lip-sync",
        {"video_url": url, "audio_url": url},
        {"Authorization": f"Token {key}"},
    )
    assert vidu.status == 400 and vidu.json()["reason"] == "BadRequest", vidu.body

    form = '--b\r\nContent-Disposition: form-data; name="image_url"\r\n\r\n' + url + "\r\n--b--\r\n"
    picwish = http("POST", base + "/api/tasks/visual/scale", form.encode(),
                   {"X-API-KEY": key, "Content-Type": "multipart/form-data; boundary=b"})  # fmt: skip
    assert picwish.status == 400 and picwish.json()["status"] == 400, picwish.body

    listing = http("GET", base + "/v1/videos", headers=auth).json()
    assert listing["data"] == [], "nothing was stored"
