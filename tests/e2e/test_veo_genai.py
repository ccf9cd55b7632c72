"""Veo through the real google-genai SDK: `models.generate_videos` + `operations.get` until
done, then the video `uri` (on the gateway's host) downloaded with the caller's key.

google-genai 3.x refuses `generate_videos` on the Gemini API before sending anything (it
allows it only in its enterprise mode), so this runs the SDK's 2.34.0 release, the last that
sends it, from its own venv (`.venv-genai2`, set up by scripts/test.sh)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.media_fixtures import make_image
from tests.support.served import ServedGateway
from tests.support.video import decode_video, sandbox_config

ROOT = Path(__file__).resolve().parents[2]
GENAI2 = ROOT / ".venv-genai2" / "bin" / "python"
SCRIPT = ROOT / "tests" / "support" / "genai2_veo.py"


def run_genai2(
    base_url: str, key: str, model: str, prompt: str, out: Path, image: Path | None = None
) -> dict:
    assert GENAI2.exists(), "run scripts/test.sh once: it sets up .venv-genai2 (google-genai 2.34.0)"
    args = [str(GENAI2), str(SCRIPT), base_url, key, model, prompt, str(out)]
    if image is not None:
        args.append(str(image))
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with ServedGateway(tmp_path_factory.mktemp("veo-genai"), config=sandbox_config(1.0)) as g:
        yield g


def test_generate_videos_then_operations_get_then_download(gw: ServedGateway, tmp_path: Path) -> None:
    key = gw.create_key()
    result = run_genai2(gw.base_url, key, "veo-3.0-generate-001", "a paper boat on a pond", tmp_path)
    assert result["error"] is None and result["polls"] >= 1
    assert result["name"].startswith("models/veo-3.0-generate-001/operations/")
    [video] = result["videos"]
    assert video["uri"].startswith(gw.base_url + "/v1beta/files/")
    decoded = decode_video(Path(video["path"]).read_bytes())
    assert (decoded.codec, decoded.width, decoded.height) == ("h264", 1280, 720)
    assert abs(decoded.seconds - 2.0) < 0.1


def test_generate_videos_from_an_image(gw: ServedGateway, tmp_path: Path) -> None:
    image = tmp_path / "start.png"
    image.write_bytes(make_image(640, 360, "png", color=(20, 180, 40)))
    result = run_genai2(
        gw.base_url, gw.create_key(), "veo-2.0-generate-001", "the field sways", tmp_path, image
    )
    [video] = result["videos"]
    assert decode_video(Path(video["path"]).read_bytes()).width == 1280


def test_generate_videos_through_a_gemini_upstream(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """The same SDK loop with a real Gemini API on the other side (a fake speaking its wire
    format): the operation is relayed, and the file comes through the gateway, which follows
    Google's redirect with its own key."""
    from tests.support.fake_veo import FakeVeo

    with FakeVeo() as veo:
        config = {
            "providers": [
                {"name": "google", "protocol": "gemini", "base_url": veo.base_url, "api_key": veo.api_key}
            ],
            "models": [{"name": "veo-3.0-generate-001", "routes": [{"provider": "google"}]}],
            "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5},
        }
        with ServedGateway(tmp_path_factory.mktemp("veo-upstream"), config=config) as gw:
            result = run_genai2(gw.base_url, gw.create_key(), "veo-3.0-generate-001", "a comet", tmp_path)
        [submit] = veo.submits()
        assert submit.params()["instances"][0]["prompt"] == "a comet"
        assert submit.headers["x-goog-api-key"] == veo.api_key
        assert result["error"] is None
        [video] = result["videos"]
        assert video["uri"].startswith(gw.base_url + "/v1beta/files/")
        assert decode_video(Path(video["path"]).read_bytes()).codec == "h264"
        assert veo.downloads(), "the gateway fetched the file from the upstream"
