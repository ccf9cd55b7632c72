"""The video examples of docs/video.md as written: a remix whose source is deleted right after the
remix is submitted still renders (it keeps what it needs from its source at submit), and the
unified body's `seconds` (the OpenAI videos API's name for it) is honoured like `duration`,
not silently dropped. The gateway in-process with quick sandbox tasks."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.in_process import InProcessGateway
from tests.support.video import decode_video, sandbox_config


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    config = sandbox_config(0.6, tasks={"poll_interval": 0.2, "max_poll_interval": 0.3})
    with InProcessGateway(tmp_path_factory.mktemp("video-examples"), config) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def key(gw: InProcessGateway) -> str:
    return gw.create_key()


def _until_done(gw: InProcessGateway, key: str, path: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body: dict[str, Any] = gw.request("GET", path, key=key).json()
        if body.get("status") in ("completed", "failed"):
            return body
        time.sleep(0.2)
    raise AssertionError(f"{path} did not finish")


def test_a_remix_renders_after_its_source_is_deleted(gw: InProcessGateway, key: str) -> None:
    made = gw.request(
        "POST", "/v1/videos", key=key,
        json={"model": "sandbox-video", "prompt": "a lighthouse at dusk", "seconds": "1", "size": "128x128"},
    )  # fmt: skip
    assert made.status_code == 200, made.text
    source = _until_done(gw, key, f"/v1/videos/{made.json()['id']}")
    assert source["status"] == "completed", source
    remix = gw.request("POST", f"/v1/videos/{source['id']}/remix", key=key, json={"prompt": "in a storm"})
    assert remix.status_code == 200, remix.text
    # As the README's example does: the source goes at once, before the remix has rendered.
    assert gw.request("DELETE", f"/v1/videos/{source['id']}", key=key).status_code == 200
    done = _until_done(gw, key, f"/v1/videos/{remix.json()['id']}")
    assert done["status"] == "completed", done
    video = gw.request("GET", f"/v1/videos/{done['id']}/content", key=key)
    assert decode_video(video.content).width == 128


def test_the_unified_body_honours_seconds(gw: InProcessGateway, key: str) -> None:
    body = {"model": "sandbox-video", "prompt": "a red kite", "seconds": 2, "width": 128, "height": 96}
    made = gw.request("POST", "/v1/video/generations", key=key, json=body, headers={"Idempotency-Key": "k-1"})
    assert made.status_code == 200, made.text
    task = made.json()["task_id"]
    again = gw.request(
        "POST", "/v1/video/generations", key=key, json=body, headers={"Idempotency-Key": "k-1"}
    )
    assert again.json()["task_id"] == task
    done = _until_done(gw, key, f"/v1/video/generations/{task}")
    assert done["status"] == "completed", done
    url = done["url"].split("gateway.test", 1)[-1]
    assert decode_video(gw.request("GET", url, key=key).content).seconds == pytest.approx(2, abs=0.1)
    both = gw.request(
        "POST", "/v1/video/generations", key=key, json={**body, "duration": 3},
    )  # fmt: skip
    assert both.status_code == 400 and both.json()["error"]["param"] == "seconds", both.text
