"""Audio and image families through fake upstreams of each wire format on 127.0.0.1: the
OpenAI SDK / google-genai / plain HTTP against the real gateway, each fake checking what it
received (fields as sent with only the model id mapped, files byte-identical). Also: memory
stays flat while a 20 MB upload and a long speech stream are relayed."""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest
from google import genai
from google.genai import types

from tests.support.fake_fish import FakeFish
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai_media import FakeOpenAIMedia
from tests.support.fake_stability import FakeStability
from tests.support.gateway import GatewayProcess
from tests.support.media_fixtures import big_wav, decode_audio, encode_tone, image_info, make_image, make_mask
from tests.support.net import http
from tests.support.served import ServedGateway

MB = 1024 * 1024


@dataclass
class Rig:
    gw: ServedGateway | GatewayProcess
    key: str
    oa: FakeOpenAIMedia
    fish: FakeFish
    stab: FakeStability
    gem: FakeGemini

    @property
    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.gw.base_url + "/v1", api_key=self.key, max_retries=0)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    yield from _rig(Path(tmp_path_factory.mktemp("media-up")), ServedGateway)


@pytest.fixture
def process_rig(tmp_path: Path) -> Iterator[Rig]:
    """The same in front of a real `unigate serve`, whose memory a test reads."""
    yield from _rig(tmp_path, GatewayProcess)


def _rig(workdir: Path, server: type[ServedGateway] | type[GatewayProcess]) -> Iterator[Rig]:
    with FakeOpenAIMedia() as oa, FakeFish() as fish, FakeStability() as stab, FakeGemini() as gem:
        routes = {
            "whisper": ("oa", "whisper-1"),
            "speech": ("oa", "tts-1"),
            "painter": ("oa", "gpt-image-1"),
            "dalle": ("oa", "dall-e-3"),
            "s1": ("fish", "s2-pro"),
            "fish-asr": ("fish", "fish-asr"),
            "stable-image-ultra": ("stab", "ultra"),
            "stable-image-core": ("stab", "core"),
            "sd3.5-large": ("stab", "sd3.5-large"),
            "nano": ("gem", "gemini-image-up"),
        }
        config = {
            "providers": [
                {"name": "oa", "protocol": "openai", "base_url": oa.base_url, "api_key": "sk-oa-secret"},
                {"name": "fish", "protocol": "fish", "base_url": fish.base_url, "api_key": "fish-secret"},
                {"name": "stab", "protocol": "stability", "base_url": stab.base_url, "api_key": "sk-stab"},
                {"name": "gem", "protocol": "gemini", "base_url": gem.base_url, "api_key": "g-secret"},
            ],
            "models": [
                {"name": name, "routes": [{"provider": p, "model": m}]} for name, (p, m) in routes.items()
            ],
            "limits": {"max_audio_upload": 25 * MB},
        }
        with server(workdir, config=config) as gw:
            yield Rig(gw, gw.create_key(), oa, fish, stab, gem)


def test_transcription_fields_and_file_relayed(rig: Rig) -> None:
    audio = encode_tone(1.0, "mp3")
    result = rig.client.audio.transcriptions.create(
        model="whisper",
        file=("speech.mp3", audio, "audio/mpeg"),
        language="fr",
        prompt="Bonjour",
        temperature=0.2,
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
    )
    assert result.text == "fake transcript" and result.words
    got = rig.oa.received[-1]
    assert got.path == "/v1/audio/transcriptions"
    assert got.fields["model"] == ["whisper-1"] and got.fields["language"] == ["fr"]
    assert got.fields["prompt"] == ["Bonjour"] and got.fields["temperature"] == ["0.2"]
    assert got.fields["timestamp_granularities[]"] == ["word", "segment"]
    assert got.files["file"] == [("speech.mp3", "audio/mpeg", audio)]
    assert got.headers["authorization"] == "Bearer sk-oa-secret"


def test_translation_as_text(rig: Rig) -> None:
    text = rig.client.audio.translations.create(
        model="whisper", file=("a.wav", encode_tone(1.0, "wav")), response_format="text"
    )
    assert isinstance(text, str) and text.strip() == "fake transcript"
    assert rig.oa.received[-1].path == "/v1/audio/translations"


def test_speech_relayed_as_a_stream(rig: Rig) -> None:
    rig.oa.speech_seconds = 2.0
    with rig.client.audio.speech.with_streaming_response.create(
        model="speech", voice="coral", input="hello", response_format="flac", speed=1.25
    ) as resp:
        assert resp.headers["content-type"] == "audio/flac"
        data = b"".join(resp.iter_bytes())
    codec, _, duration = decode_audio(data)
    assert codec == "flac" and abs(duration - 2.0) < 0.1
    sent = rig.oa.received[-1].json
    assert sent == {
        "model": "tts-1",
        "voice": "coral",
        "input": "hello",
        "response_format": "flac",
        "speed": 1.25,
    }


def test_image_generation_relayed(rig: Rig) -> None:
    result = rig.client.images.generate(model="painter", prompt="a cat", size="512x512", quality="high", n=2)
    assert result.data and len(result.data) == 2
    assert image_info(base64.b64decode(result.data[0].b64_json or "")) == ("png", 512, 512)
    assert rig.oa.received[-1].json == {
        "model": "gpt-image-1",
        "prompt": "a cat",
        "size": "512x512",
        "quality": "high",
        "n": 2,
    }
    url = rig.client.images.generate(model="dalle", prompt="a dog", response_format="url", size="256x256")
    assert url.data and url.data[0].url and url.data[0].url.startswith(rig.oa.base_url.removesuffix("/v1"))


def test_image_edits_files_byte_identical(rig: Rig) -> None:
    first, second = make_image(64, 64, "png"), make_image(32, 32, "webp")
    mask = make_mask(64, 64)
    rig.client.images.edit(
        model="painter",
        image=[("a.png", first, "image/png"), ("b.webp", second, "image/webp")],
        mask=("m.png", mask),
        prompt="p",
    )
    got = rig.oa.received[-1]
    assert [f[2] for f in got.files["image[]"]] == [first, second] and got.files["mask"][0][2] == mask
    assert got.fields["model"] == ["gpt-image-1"] and got.fields["prompt"] == ["p"]
    rig.client.images.edit(model="painter", image=("one.png", first), prompt="single")
    assert [f[2] for f in rig.oa.received[-1].files["image"]] == [first]


def test_upstream_errors_relayed_in_openai_shape(rig: Rig) -> None:
    rig.oa.mode = "reject400"
    try:
        with pytest.raises(openai.BadRequestError) as err:
            rig.client.images.generate(model="painter", prompt="x")
        assert "upstream says" in str(err.value)
        rig.oa.mode = "fail500"
        with pytest.raises(openai.APIStatusError) as failed:
            rig.client.audio.speech.create(model="speech", voice="alloy", input="x")
        assert failed.value.status_code == 502 and "sk-oa" not in str(failed.value.body)
    finally:
        rig.oa.mode = "ok"


def test_gemini_image_content_relayed(rig: Rig) -> None:
    client = genai.Client(api_key=rig.key, http_options=types.HttpOptions(base_url=rig.gw.base_url))
    resp = client.models.generate_content(
        model="nano",
        contents="draw",
        config=types.GenerateContentConfig(response_modalities=["TEXT", "IMAGE"]),
    )
    inline = [p.inline_data for p in resp.candidates[0].content.parts or [] if p.inline_data]  # type: ignore[index, union-attr]
    assert inline and image_info(inline[0].data or b"") == ("png", 128, 128)
    call, body, _ = rig.gem.received[-1]
    assert call.startswith("gemini-image-up:generateContent")
    assert body["generationConfig"]["responseModalities"] == ["TEXT", "IMAGE"]


def test_fish_tts_and_asr_relayed(rig: Rig) -> None:
    auth = {"Authorization": f"Bearer {rig.key}"}
    body = {"text": "hi fish", "format": "wav", "sample_rate": 24000, "latency": "balanced"}
    res = http("POST", rig.gw.base_url + "/fish/v1/tts", body, {**auth, "model": "s1"})
    assert res.status == 200 and res.headers["content-type"] == "audio/wav"
    assert decode_audio(res.body)[:2] == ("pcm_s16le", 24000)
    got = rig.fish.received[-1]
    assert (
        got.headers["model"] == "s2-pro"
        and got.json == body
        and got.headers["authorization"] == "Bearer fish-secret"
    )
    audio = encode_tone(1.5, "wav")
    form, ctype = _form({"language": "en", "ignore_timestamps": "false"}, {"audio": ("a.wav", audio)})
    res = http("POST", rig.gw.base_url + "/fish/v1/asr", form, {**auth, "Content-Type": ctype})
    assert res.status == 200 and abs(res.json()["duration"] - 1.5) < 0.05
    got = rig.fish.received[-1]
    assert got.files["audio"][0][2] == audio and got.fields == {
        "language": ["en"],
        "ignore_timestamps": ["false"],
    }


@pytest.mark.parametrize("variant", ["ultra", "core", "sd3"])
def test_stability_relayed_both_accepts(rig: Rig, variant: str) -> None:
    url = f"{rig.gw.base_url}/stability/v2beta/stable-image/generate/{variant}"
    auth = {"Authorization": f"Bearer {rig.key}"}
    form, ctype = _form({"prompt": "a fox", "aspect_ratio": "16:9", "output_format": "png", "seed": "7"}, {})
    res = http("POST", url, form, {**auth, "Content-Type": ctype, "Accept": "image/*"})
    assert res.status == 200 and res.headers["finish-reason"] == "SUCCESS" and res.headers["seed"] == "7"
    assert image_info(res.body) == ("png", 1344, 768)
    got = rig.stab.received[-1]
    assert got.path == f"/v2beta/stable-image/generate/{variant}" and got.fields["prompt"] == ["a fox"]
    assert ("model" in got.fields) == (variant == "sd3")
    res = http("POST", url, form, {**auth, "Content-Type": ctype, "Accept": "application/json"})
    assert res.json()["seed"] == 7 and image_info(base64.b64decode(res.json()["image"]))[0] == "png"
    bad, ctype = _form({"prompt": "x", "aspect_ratio": "7:3"}, {})
    res = http("POST", url, bad, {**auth, "Content-Type": ctype})
    assert res.status == 400 and res.json()["errors"]


@pytest.mark.process  # the server process's own memory
def test_memory_flat_relaying_a_20mb_upload_and_a_long_speech_stream(
    process_rig: Rig, tmp_path: Path
) -> None:
    rig = process_rig
    path = tmp_path / "big.wav"
    big_wav(path, 20)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    before = _rss_mb(rig.gw)
    for _ in range(3):
        with path.open("rb") as f:
            rig.client.audio.transcriptions.create(model="whisper", file=("big.wav", f))
        assert hashlib.sha256(rig.oa.received[-1].files["file"][0][2]).hexdigest() == digest
    rig.oa.received.clear()  # the fake keeps what it received; the gateway must not
    upload_growth = _rss_mb(rig.gw) - before
    rig.oa.big_speech_bytes = 200 * MB
    try:
        start = time.monotonic()
        seen = 0
        peak = before
        with rig.client.audio.speech.with_streaming_response.create(
            model="speech", voice="alloy", input="long", response_format="pcm"
        ) as resp:
            for i, chunk in enumerate(resp.iter_bytes(256 * 1024)):
                seen += len(chunk)
                if i % 100 == 0:
                    peak = max(peak, _rss_mb(rig.gw))
        elapsed = time.monotonic() - start
    finally:
        rig.oa.big_speech_bytes = 0
    assert seen == 200 * MB
    print(
        f"\nspeech relay: {seen / MB / elapsed:.0f} MB/s; RSS {before:.1f} MB before, upload growth "
        f"{upload_growth:+.1f} MB, peak during 200 MB stream {peak:.1f} MB"
    )
    assert upload_growth < 12, f"gateway RSS grew {upload_growth:.1f} MB over three 20 MB uploads"
    assert peak - before < 20, f"gateway RSS peaked {peak - before:.1f} MB above baseline during the stream"


def _rss_mb(gw: ServedGateway | GatewayProcess) -> float:
    assert isinstance(gw, GatewayProcess) and gw.proc is not None
    for line in Path(f"/proc/{gw.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _form(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    from tests.e2e.test_media_sandbox import _form as build

    return build(fields, files)


def test_speech_upstream_dying_mid_stream_is_an_error_not_a_short_file(rig: Rig) -> None:
    rig.oa.mode, rig.oa.speech_seconds = "die_mid", 3.0
    got = b""
    try:
        with (
            pytest.raises(Exception) as err,  # the HTTP library's own "incomplete body" error
            rig.client.audio.speech.with_streaming_response.create(
                model="speech", voice="alloy", input="x", response_format="wav"
            ) as resp,
        ):
            for chunk in resp.iter_bytes():
                got += chunk
    finally:
        rig.oa.mode, rig.oa.speech_seconds = "ok", 1.0
    assert got, "the first chunk reached the client before the upstream died"
    assert (
        "incomplete" in str(err.value).lower()
        or "closed" in str(err.value).lower()
        or "peer" in str(err.value).lower()
    )


def test_other_requests_stay_fast_while_big_uploads_are_parsed(rig: Rig, tmp_path: Path) -> None:
    import threading

    path = tmp_path / "big.wav"
    big_wav(path, 20)
    errors: list[BaseException] = []

    def upload() -> None:
        try:
            for _ in range(3):
                with path.open("rb") as f:
                    rig.client.audio.transcriptions.create(model="whisper", file=("big.wav", f))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    worker = threading.Thread(target=upload)
    worker.start()
    slowest = 0.0
    while worker.is_alive():
        start = time.monotonic()
        assert http("GET", rig.gw.base_url + "/healthz").status == 200
        slowest = max(slowest, time.monotonic() - start)
        time.sleep(0.01)
    worker.join()
    rig.oa.received.clear()
    assert not errors
    print(f"\nslowest health check during uploads: {slowest * 1000:.1f} ms")
    assert slowest < 0.5, f"a health check took {slowest * 1000:.0f} ms while uploads were parsed"
