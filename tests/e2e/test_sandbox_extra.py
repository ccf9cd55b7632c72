"""A production install without the `sandbox` extra (no PyAV/FFmpeg, no Pillow) still starts and
serves text and music from the sandbox; an audio, image or video call says which extra it needs."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.support.gateway import GatewayProcess
from tests.support.net import http

pytestmark = pytest.mark.process


def test_without_the_media_extra(tmp_path: Path) -> None:
    hide = tmp_path / "hide"
    hide.mkdir()
    # Imports of these fail in the gateway process, as if they were not installed.
    (hide / "sitecustomize.py").write_text(
        "import sys\nsys.modules['av'] = None\nsys.modules['PIL'] = None\n"
    )
    gw = GatewayProcess(tmp_path, env={"PYTHONPATH": str(hide)})
    with gw:
        key = gw.create_key()
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
        reply = client.chat.completions.create(
            model="sandbox-chat", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content
        with pytest.raises(openai.APIStatusError) as refused:
            client.images.generate(model="sandbox-image", prompt="a lighthouse")
        assert refused.value.status_code == 501
        assert "pip install 'unigate[sandbox]'" in refused.value.message and "PIL" in refused.value.message
        music = http(
            "POST",
            gw.base_url + "/suno/submit/music",
            {"prompt": "la", "mv": "chirp-v4", "title": "t", "tags": "pop"},
            {"Authorization": f"Bearer {key}"},
        )
        assert music.status == 200, music.body
        video = http(
            "POST",
            gw.base_url + "/v1/video/generations",
            {"model": "sandbox-video", "prompt": "a kite"},
            {"Authorization": f"Bearer {key}"},
        )
        assert video.status == 501 and "unigate[sandbox]" in video.json()["error"]["message"]
