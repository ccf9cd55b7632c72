"""The links the gateway hands out (stored media, task files, Veo file URIs) never follow the
request's `Host` header: they use `public_url` (config) or `UNIGATE_PUBLIC_URL` (which wins),
else the address the server is bound to. Bad values stop `serve` with one `error:` line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.gateway import serve_refused
from tests.support.net import free_port, http
from tests.support.served import ServedGateway
from unigate.config import check_public_url

EVIL = {"Host": "evil.example", "X-Forwarded-Host": "evil.example"}
CONFIG: dict[str, Any] = {
    "sandbox": {"enabled": True, "task_seconds": 1, "music_seconds": 1},
    "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5},
}


def _links(gw: ServedGateway) -> list[str]:
    """Every kind of link the gateway makes, each asked for with a forged Host header."""
    key = gw.create_key()
    auth = {"Authorization": f"Bearer {key}", **EVIL}
    out: list[str] = []
    image = http(
        "POST",
        gw.base_url + "/v1/images/generations",
        {"model": "sandbox-image", "prompt": "a kite", "size": "256x256", "response_format": "url"},
        auth,
    )
    assert image.status == 200, image.body
    out.append(image.json()["data"][0]["url"])
    music = http(
        "POST",
        gw.base_url + "/suno/submit/music",
        {"prompt": "[Verse]\nhello", "mv": "chirp-v4", "title": "t", "tags": "pop"},
        auth,
    )
    assert music.status == 200, music.body
    video = http(
        "POST",
        gw.base_url + "/v1/video/generations",
        {"model": "sandbox-video", "prompt": "a red kite", "duration": 1, "width": 160, "height": 120},
        auth,
    )
    assert video.status == 200, video.body
    veo = http(
        "POST",
        gw.base_url + "/v1beta/models/veo-3.0-generate-001:predictLongRunning",
        {"instances": [{"prompt": "a boat"}], "parameters": {"durationSeconds": 1}},
        {"x-goog-api-key": key, **EVIL},
    )
    assert veo.status == 200, veo.body
    plain = {"Authorization": f"Bearer {key}"}  # what others read later: the stored links
    deadline = time.monotonic() + 40
    while True:
        song = http(
            "GET", gw.base_url + f"/suno/fetch/{music.json()['data']['task_id']}", headers=plain
        ).json()
        clip = http(
            "GET", gw.base_url + f"/v1/video/generations/{video.json()['task_id']}", headers=plain
        ).json()
        op = http(
            "GET", gw.base_url + "/v1beta/" + veo.json()["name"], headers={"x-goog-api-key": key}
        ).json()
        if song["data"]["status"] == "SUCCESS" and clip["status"] == "completed" and op.get("done"):
            break
        assert time.monotonic() < deadline, (song, clip, op)
        time.sleep(0.3)
    for item in song["data"]["data"]:
        out += [item["audio_url"], item["image_url"], item["avatar_image_url"]]
    out.append(clip["url"])
    samples = op["response"]["generateVideoResponse"]["generatedSamples"]
    out += [s["video"]["uri"] for s in samples]
    return out


def test_a_forged_host_never_reaches_a_link(tmp_path: Path) -> None:
    with ServedGateway(tmp_path, config=CONFIG) as gw:
        links = _links(gw)
        assert links and all(link.startswith(gw.base_url + "/") for link in links), links
        assert not any("evil" in link for link in links)
        assert http("GET", links[0]).status == 200


def test_configured_public_url_is_used(tmp_path: Path) -> None:
    with ServedGateway(tmp_path, config={**CONFIG, "public_url": "https://gw.example.com/"}) as gw:
        links = _links(gw)
        assert all(link.startswith("https://gw.example.com/") for link in links), links
        assert any(link.startswith("https://gw.example.com/media/") for link in links)
        # Served under the configured name, fetched here through the bound address.
        assert http("GET", gw.base_url + links[0].removeprefix("https://gw.example.com")).status == 200


def test_the_environment_wins_over_the_file(tmp_path: Path) -> None:
    env = {"UNIGATE_PUBLIC_URL": "http://gw.internal:8443/unigate"}
    with ServedGateway(tmp_path, config={**CONFIG, "public_url": "https://gw.example.com"}, env=env) as gw:
        key = gw.create_key()
        res = http(
            "POST",
            gw.base_url + "/v1/images/generations",
            {"model": "sandbox-image", "prompt": "a kite", "size": "256x256", "response_format": "url"},
            {"Authorization": f"Bearer {key}", **EVIL},
        )
        assert res.json()["data"][0]["url"].startswith("http://gw.internal:8443/unigate/media/")


@pytest.mark.parametrize(
    "value",
    ["ftp://gw.example.com", "gw.example.com", "https://", "https://gw.example.com/?a=1",
     "https://gw.example.com/#top", "https://user" + ":pw@gw.example.com", "https://gw.example.com:99999",
     "https://gw example.com"],
)  # fmt: skip
def test_bad_values_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        check_public_url(value)


def test_good_values_are_normalised() -> None:
    assert check_public_url("https://gw.example.com/") == "https://gw.example.com"
    assert check_public_url("http://[::1]:8000/base/") == "http://[::1]:8000/base"


@pytest.mark.process
def test_serve_refuses_a_bad_public_url(tmp_path: Path) -> None:
    _, proc = serve_refused(tmp_path, "public_url: ftp://gw.example.com\n")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: config file") and "public_url" in proc.stderr

    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIGATE_")}
    env.update(UNIGATE_DATA_DIR=str(tmp_path / "d2"), UNIGATE_PUBLIC_URL="https://gw.example.com/?x=1")
    proc = subprocess.run(
        [sys.executable, "-m", "unigate", "serve", "--port", str(free_port())],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("error: UNIGATE_PUBLIC_URL:") and "\n" not in line
    assert json.dumps(line)  # one printable line
