"""A video task that got its answer survives the gateway being killed (kill -9) right after:
a restarted gateway on the same data finishes it, and its file downloads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.gateway import GatewayProcess
from tests.support.net import http
from tests.support.video import decode_video, sandbox_config, wait_for

pytestmark = pytest.mark.process


def test_video_tasks_survive_kill_9(tmp_path: Path) -> None:
    config = sandbox_config(2.0)
    first = GatewayProcess(tmp_path, config=config).start()
    key = first.create_key()
    auth = {"Authorization": f"Bearer {key}"}
    body = {"model": "sandbox-video", "prompt": "durable", "duration": 1, "width": 128, "height": 128}
    unified = http("POST", first.base_url + "/v1/video/generations", body, auth).json()["id"]
    sora = {"prompt": "also durable", "model": "sandbox-video", "seconds": "1", "size": "128x128"}
    openai = http("POST", first.base_url + "/v1/videos", sora, auth).json()["id"]
    first.kill()

    second = GatewayProcess(tmp_path, config=config).start()
    try:
        done = wait_for(
            lambda: http("GET", f"{second.base_url}/v1/video/generations/{unified}", headers=auth).json(),
            lambda r: r["status"] in ("completed", "failed"),
        )
        assert done["status"] == "completed"
        # Links carry the address the client used at submit (the first process's port here).
        url = done["url"].replace(first.base_url, second.base_url)
        assert decode_video(http("GET", url).body).width == 128
        video = wait_for(
            lambda: http("GET", f"{second.base_url}/v1/videos/{openai}", headers=auth).json(),
            lambda r: r["status"] in ("completed", "failed"),
        )
        assert video["status"] == "completed"
    finally:
        second.stop()
