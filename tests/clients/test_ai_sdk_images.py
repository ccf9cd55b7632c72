"""The Vercel AI SDK's `generateImage` (pinned `ai`, `@ai-sdk/openai`, `@ai-sdk/google`) against
the gateway: OpenAI-format image calls on the sandbox, on Gemini's image model and on an OpenAI
image upstream; Gemini-format ones (`google.image`) on Gemini's image model (relayed) and on the
OpenAI image upstream (drawn through its image API). Each generates two landscape images and
edits a picture; the images are checked by their pixels."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.clients.rig import GEMINI_IMAGE, OPENAI_IMAGE, Rig, outcome, run_node_driver
from tests.support.media_fixtures import image_info, make_image

pytestmark = pytest.mark.clients

# (provider package, gateway model, the landscape size drawn)
ENTRIES = [
    ("openai", "sandbox-image", (1536, 1024)),
    ("openai", GEMINI_IMAGE, (156, 104)),  # 3:2, at the fake Gemini's scale
    ("openai", OPENAI_IMAGE, (1536, 1024)),
    ("google", GEMINI_IMAGE, (156, 104)),
    ("google", OPENAI_IMAGE, (1536, 1024)),
]
PICTURE = (300, 200)
Ran = tuple[dict[str, Any], dict[str, int]]  # the driver's results, the fakes' logs before it


@pytest.fixture(scope="module")
def ran(rig: Rig, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    home: Path = tmp_path_factory.mktemp("ai-sdk-images")
    before = {"gemini": len(rig.gemini.received), "media": len(rig.media.received)}
    spec = {
        "base_url": rig.base_url,
        "key": rig.key,
        "entries": [[provider, model] for provider, model, _ in ENTRIES],
        "picture": base64.b64encode(make_image(*PICTURE, "png")).decode(),
    }
    return run_node_driver("ai_sdk_images.mjs", spec, home), before


def _pixels(got: dict[str, Any]) -> list[tuple[int, int]]:
    return [image_info(base64.b64decode(image["base64"]))[1:] for image in got["images"]]


@pytest.mark.parametrize(("provider", "model", "size"), ENTRIES)
def test_generate(ran: Ran, provider: str, model: str, size: tuple[int, int]) -> None:
    got = outcome(ran[0], f"{provider}:{model}", "generate")
    assert _pixels(got) == [size, size]
    assert all(image["mediaType"] == "image/png" for image in got["images"])


@pytest.mark.parametrize(("provider", "model"), [entry[:2] for entry in ENTRIES])
def test_edit(ran: Ran, provider: str, model: str) -> None:
    got = outcome(ran[0], f"{provider}:{model}", "edit")
    assert _pixels(got) == [PICTURE]  # an edit keeps its picture's size on every upstream


def test_the_upstreams_drew_them(rig: Rig, ran: Ran) -> None:
    _, before = ran
    gemini = rig.gemini.received[before["gemini"] :]
    # Each package's two images (one call each) and its edit.
    assert len(gemini) == 2 * (2 + 1)
    assert all(call.startswith("gemini-2.5-flash-image:generateContent") for call, _, _ in gemini)
    media = [r.path for r in rig.media.received[before["media"] :]]
    # Each package draws its two images in two calls (the AI SDK asks one image per call of a
    # model it does not know), and edits once.
    assert sorted(media) == sorted(["/v1/images/generations"] * 4 + ["/v1/images/edits"] * 2)
