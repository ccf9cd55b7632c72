"""The Vercel AI SDK's image and speech calls (pinned `ai`, `@ai-sdk/openai`, `@ai-sdk/google`)
against the gateway. `generateImage`: OpenAI-format image calls on the sandbox, on Gemini's image
model and on an OpenAI image upstream; Gemini-format ones (`google.image`) on Gemini's image
model (relayed) and on the OpenAI image upstream (drawn through its image API); two landscape
images and an edit each, checked by their pixels. `generateSpeech`: each package on the
sandbox, on Gemini's TTS model and on an OpenAI speech upstream, checked by decoding the audio.
`transcribe` (`openai.transcription`): on the sandbox and on a Gemini model, which hears it."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.clients.rig import (
    GEMINI_IMAGE,
    GEMINI_VOICE,
    OPENAI_IMAGE,
    OPENAI_VOICE,
    Rig,
    outcome,
    run_node_driver,
)
from tests.support.media_fixtures import decode_audio, encode_tone, image_info, make_image

pytestmark = pytest.mark.clients

# (provider package, gateway model, the landscape size drawn)
IMAGES = [
    ("openai", "sandbox-image", (1536, 1024)),
    ("openai", GEMINI_IMAGE, (156, 104)),  # 3:2, at the fake Gemini's scale
    ("openai", OPENAI_IMAGE, (1536, 1024)),
    ("google", GEMINI_IMAGE, (156, 104)),
    ("google", OPENAI_IMAGE, (1536, 1024)),
]
# (provider package, gateway model, the codec the audio decodes as)
SPEECH = [
    ("openai", "sandbox-tts", "mp3"),
    ("openai", GEMINI_VOICE, "pcm_s16le"),  # Gemini's samples as WAV (mp3 asked, named)
    ("openai", OPENAI_VOICE, "mp3"),
    ("google", "sandbox-tts", "pcm_s16le"),  # the SDK wraps Gemini's raw samples in a WAV header
    ("google", GEMINI_VOICE, "pcm_s16le"),
    ("google", OPENAI_VOICE, "pcm_s16le"),
]
TRANSCRIPTION = [("openai", "sandbox-transcribe"), ("openai", "fake-gemini")]
PICTURE = (300, 200)
AUDIO = encode_tone(0.5, "wav")
Ran = tuple[dict[str, Any], dict[str, int]]  # the driver's results, the fakes' logs before it


@pytest.fixture(scope="module")
def ran(rig: Rig, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    home: Path = tmp_path_factory.mktemp("ai-sdk-media")
    before = {"gemini": len(rig.gemini.received), "media": len(rig.media.received)}
    spec = {
        "base_url": rig.base_url,
        "key": rig.key,
        "images": [[provider, model] for provider, model, _ in IMAGES],
        "speech": [[provider, model] for provider, model, _ in SPEECH],
        "transcription": [list(entry) for entry in TRANSCRIPTION],
        "audio": base64.b64encode(AUDIO).decode(),
        "picture": base64.b64encode(make_image(*PICTURE, "png")).decode(),
    }
    return run_node_driver("ai_sdk_media.mjs", spec, home), before


def _pixels(got: dict[str, Any]) -> list[tuple[int, int]]:
    return [image_info(base64.b64decode(image["base64"]))[1:] for image in got["images"]]


@pytest.mark.parametrize(("provider", "model", "size"), IMAGES)
def test_generate_image(ran: Ran, provider: str, model: str, size: tuple[int, int]) -> None:
    got = outcome(ran[0], f"image:{provider}:{model}", "generate")
    assert _pixels(got) == [size, size]
    assert all(image["mediaType"] == "image/png" for image in got["images"])


@pytest.mark.parametrize(("provider", "model"), [entry[:2] for entry in IMAGES])
def test_edit_image(ran: Ran, provider: str, model: str) -> None:
    got = outcome(ran[0], f"image:{provider}:{model}", "edit")
    assert _pixels(got) == [PICTURE]  # an edit keeps its picture's size on every upstream


@pytest.mark.parametrize(("provider", "model", "codec"), SPEECH)
def test_speech(ran: Ran, provider: str, model: str, codec: str) -> None:
    got = outcome(ran[0], f"speech:{provider}:{model}", "speak")
    decoded, _, seconds = decode_audio(base64.b64decode(got["base64"]))
    assert decoded == codec and seconds > 0.1


@pytest.mark.parametrize(("provider", "model"), TRANSCRIPTION)
def test_transcription(ran: Ran, provider: str, model: str) -> None:
    got = outcome(ran[0], f"transcription:{provider}:{model}", "transcribe")
    if model == "fake-gemini":  # the fake Gemini says what it heard
        assert got["text"] == f"I heard {len(AUDIO)} bytes of audio/wav."
    else:
        assert isinstance(got["text"], str)


def test_the_upstreams_did_the_work(rig: Rig, ran: Ran) -> None:
    _, before = ran
    gemini = [call.split(":")[0] for call, _, _ in rig.gemini.received[before["gemini"] :]]
    # Each package's two images (one call each) and its edit; one speech call each; one transcription.
    expected_gemini = ["gemini-2.5-flash-image"] * 6 + ["gemini-2.5-flash-preview-tts"] * 2 + ["gemini-up"]
    assert sorted(gemini) == sorted(expected_gemini)
    media = [r.path for r in rig.media.received[before["media"] :]]
    # Each package draws its two images in two calls (the AI SDK asks one image per call of a
    # model it does not know), edits once, and speaks once.
    expected = ["/v1/images/generations"] * 4 + ["/v1/images/edits"] * 2 + ["/v1/audio/speech"] * 2
    assert sorted(media) == sorted(expected)
