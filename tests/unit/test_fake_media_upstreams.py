"""Self-tests of the fake media upstreams (OpenAI audio/images, Fish Audio, Stability) and the
media fixtures they are built on: each route once or twice, straight over 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import io
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import aiohttp
import pytest
from PIL import Image

from tests.support.fake_fish import FakeFish
from tests.support.fake_openai_media import FakeOpenAIMedia
from tests.support.fake_stability import FakeStability
from tests.support.media_fixtures import (
    big_wav,
    decode_audio,
    encode_tone,
    image_info,
    make_image,
    make_mask,
)
from tests.support.net import HTTPResult, http

AUTH = {"Authorization": "Bearer test-key"}


def multipart(
    fields: Sequence[tuple[str, str]], files: Sequence[tuple[str, str, str, bytes]] = ()
) -> tuple[bytes, dict[str, str]]:
    """A hand-built multipart/form-data body: (body, headers with the Content-Type)."""
    boundary = uuid.uuid4().hex
    out = bytearray()
    for name, value in fields:
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
        out += value.encode() + b"\r\n"
    for name, filename, ctype, data in files:
        out += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: {ctype}\r\n\r\n"
        ).encode()
        out += data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def post_form(
    url: str,
    fields: list[tuple[str, str]],
    files: list[tuple[str, str, str, bytes]] | None = None,
    headers: dict[str, str] | None = None,
) -> HTTPResult:
    body, hdrs = multipart(fields, files or [])
    return http("POST", url, body, {**hdrs, **(headers or {})})


@pytest.fixture
def oai() -> Iterator[FakeOpenAIMedia]:
    with FakeOpenAIMedia() as fake:
        yield fake


@pytest.fixture
def fish() -> Iterator[FakeFish]:
    with FakeFish() as fake:
        yield fake


@pytest.fixture
def stability() -> Iterator[FakeStability]:
    with FakeStability() as fake:
        yield fake


# ------------------------------------------------------------------------- media fixtures


@pytest.mark.parametrize(
    ("fmt", "codec", "rate"),
    [
        ("mp3", "mp3", 24000),
        ("opus", "opus", 48000),
        ("aac", "aac", 24000),
        ("flac", "flac", 24000),
        ("wav", "pcm_s16le", 24000),
        ("pcm", "pcm_s16le", 24000),
    ],
)
def test_encode_tone_round_trips(fmt: str, codec: str, rate: int) -> None:
    data = encode_tone(0.5, fmt)
    got_codec, got_rate, seconds = decode_audio(data, pcm_rate=24000 if fmt == "pcm" else None)
    assert (got_codec, got_rate) == (codec, rate)
    assert 0.45 < seconds < 0.6  # AAC in ADTS keeps its encoder priming


def test_images_masks_and_big_wav(tmp_path: Path) -> None:
    assert image_info(make_image(32, 16)) == ("png", 32, 16)
    assert image_info(make_image(32, 16, "jpeg", alpha=True)) == ("jpeg", 32, 16)
    assert image_info(make_image(32, 16, "webp", alpha=True)) == ("webp", 32, 16)
    with Image.open(io.BytesIO(make_mask(8, 4))) as mask:
        assert mask.mode == "RGBA"
        assert mask.getpixel((0, 0))[3] == 0  # type: ignore[index]
        assert mask.getpixel((7, 3))[3] == 255  # type: ignore[index]
    size = big_wav(tmp_path / "big.wav", 2)
    assert abs(size - 2 * 1024 * 1024) < 48000 + 44
    codec, rate, seconds = decode_audio((tmp_path / "big.wav").read_bytes())
    assert (codec, rate) == ("pcm_s16le", 24000)
    assert seconds == (size - 44) / 48000


# ------------------------------------------------------------------------- OpenAI media


def test_openai_transcriptions_formats(oai: FakeOpenAIMedia) -> None:
    audio = encode_tone(0.3, "mp3")
    url = f"{oai.base_url}/audio/transcriptions"
    file = [("file", "speech.mp3", "audio/mpeg", audio)]
    r = post_form(url, [("model", "whisper-1")], file)
    assert r.status == 200 and r.headers["content-type"].startswith("application/json")
    assert r.json() == {"text": "fake transcript", "usage": {"type": "duration", "seconds": 2}}
    r = post_form(
        url,
        [
            ("model", "whisper-1"),
            ("response_format", "verbose_json"),
            ("timestamp_granularities[]", "word"),
            ("timestamp_granularities[]", "segment"),
        ],
        file,
    )
    body = r.json()
    assert body["task"] == "transcribe" and body["words"][0]["word"] == "fake"
    assert set(body["segments"][0]) >= {"id", "seek", "start", "end", "tokens", "no_speech_prob"}
    rec = oai.received[-1]
    assert rec.path == "/v1/audio/transcriptions"
    assert rec.fields["timestamp_granularities[]"] == ["word", "segment"]
    assert rec.files["file"] == [("speech.mp3", "audio/mpeg", audio)]
    assert rec.json is None
    r = post_form(url, [("model", "whisper-1"), ("response_format", "srt")], file)
    assert r.headers["content-type"].startswith("text/plain") and b"-->" in r.body
    r = post_form(url, [("model", "whisper-1"), ("response_format", "text")], file)
    assert r.body == b"fake transcript"
    r = post_form(
        f"{oai.base_url}/audio/translations",
        [("model", "whisper-1"), ("response_format", "verbose_json"), ("timestamp_granularities[]", "word")],
        file,
    )
    assert r.json()["task"] == "translate" and "words" not in r.json()
    r = post_form(url, [("model", "whisper-1")])
    assert r.status == 400 and r.json()["error"]["param"] == "file"


def test_openai_errors(oai: FakeOpenAIMedia) -> None:
    oai.mode = "fail500"
    r = http("POST", f"{oai.base_url}/images/generations", {"model": "dall-e-3", "prompt": "x"})
    assert r.status == 500 and set(r.json()["error"]) == {"message", "type", "param", "code"}
    oai.mode = "reject400"
    r = http("POST", f"{oai.base_url}/audio/speech", {"model": "tts-1", "input": "hi", "voice": "alloy"})
    assert r.status == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert oai.received[-1].json == {"model": "tts-1", "input": "hi", "voice": "alloy"}


def test_openai_speech_streams_real_audio(oai: FakeOpenAIMedia) -> None:
    oai.speech_seconds = 0.5
    body = {"model": "gpt-4o-mini-tts", "input": "hello", "voice": "alloy"}
    r = http("POST", f"{oai.base_url}/audio/speech", body)
    assert r.status == 200 and r.headers["content-type"] == "audio/mpeg"
    assert r.headers["transfer-encoding"] == "chunked"
    codec, _, seconds = decode_audio(r.body)
    assert codec == "mp3" and 0.45 < seconds < 0.6
    r = http("POST", f"{oai.base_url}/audio/speech", {**body, "response_format": "opus", "speed": 1.25})
    assert r.headers["content-type"] == "audio/ogg" and decode_audio(r.body)[:2] == ("opus", 48000)
    assert oai.received[-1].json == {**body, "response_format": "opus", "speed": 1.25}
    r = http("POST", f"{oai.base_url}/audio/speech", {**body, "response_format": "pcm"})
    assert r.headers["content-type"] == "audio/pcm" and len(r.body) == 24000


def test_openai_big_speech_is_streamed_in_chunks(oai: FakeOpenAIMedia) -> None:
    oai.big_speech_bytes = 3 * 1024 * 1024 + 7

    async def fetch() -> tuple[str, int, int]:
        async with aiohttp.ClientSession() as session:
            body = {"model": "tts-1", "input": "long", "voice": "alloy", "response_format": "mp3"}
            async with session.post(f"{oai.base_url}/audio/speech", json=body) as resp:
                total = chunks = 0
                async for chunk in resp.content.iter_any():
                    total += len(chunk)
                    chunks += 1
                return resp.headers["Content-Type"], total, chunks

    ctype, total, chunks = asyncio.run(fetch())
    assert ctype == "audio/pcm" and total == oai.big_speech_bytes and chunks > 1
    assert oai.streamed_bytes == total


def test_openai_image_generations(oai: FakeOpenAIMedia) -> None:
    r = http(
        "POST",
        f"{oai.base_url}/images/generations",
        {"model": "dall-e-3", "prompt": "a red fox", "size": "64x32"},
    )
    assert r.status == 200
    item = r.json()["data"][0]
    assert "revised_prompt" in item and "created" in r.json()
    got = http("GET", item["url"])
    assert got.headers["content-type"] == "image/png" and image_info(got.body) == ("png", 64, 32)
    assert len(oai.file_gets) == 1
    r = http(
        "POST",
        f"{oai.base_url}/images/generations",
        {
            "model": "gpt-image-1",
            "prompt": "a red fox",
            "n": 2,
            "size": "48x48",
            "output_format": "webp",
            "response_format": "url",
        },
    )
    out = r.json()
    assert [image_info(base64.b64decode(d["b64_json"])) for d in out["data"]] == [("webp", 48, 48)] * 2
    usage = out["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert set(usage["input_tokens_details"]) == {"text_tokens", "image_tokens"}


def test_openai_image_edits(oai: FakeOpenAIMedia) -> None:
    first_img, second_img, mask = make_image(40, 30), make_image(20, 20, "jpeg"), make_mask(40, 30)
    url = f"{oai.base_url}/images/edits"
    files = [
        ("image[]", "a.png", "image/png", first_img),
        ("image[]", "b.jpg", "image/jpeg", second_img),
        ("mask", "mask.png", "image/png", mask),
    ]
    r = post_form(url, [("model", "gpt-image-1"), ("prompt", "add a hat")], files)
    assert r.status == 200
    assert image_info(base64.b64decode(r.json()["data"][0]["b64_json"])) == ("png", 40, 30)
    assert r.json()["usage"]["input_tokens_details"]["image_tokens"] > 0
    rec = oai.received[-1]
    assert rec.files["image[]"] == [("a.png", "image/png", first_img), ("b.jpg", "image/jpeg", second_img)]
    assert rec.files["mask"] == [("mask.png", "image/png", mask)]
    assert rec.fields == {"model": ["gpt-image-1"], "prompt": ["add a hat"]}
    r = post_form(
        url,
        [("model", "dall-e-2"), ("prompt", "hat"), ("size", "16x16"), ("response_format", "b64_json")],
        [("image", "a.png", "image/png", first_img)],
    )
    assert image_info(base64.b64decode(r.json()["data"][0]["b64_json"])) == ("png", 16, 16)
    r = post_form(
        url,
        [("model", "dall-e-2"), ("prompt", "hat")],
        [("image", "a.png", "image/png", first_img), ("mask", "m.png", "image/png", make_mask(8, 8))],
    )
    assert r.status == 400 and r.json()["error"]["param"] == "mask"


# ------------------------------------------------------------------------- Fish Audio


def test_fish_tts(fish: FakeFish) -> None:
    url = f"{fish.base_url}/v1/tts"
    r = http("POST", url, {"text": "hi"})
    assert r.status == 401 and r.json()["status"] == 401
    fish.speech_seconds = 0.5
    body = {"text": "hello", "format": "wav", "sample_rate": 16000, "reference_id": "abc"}
    r = http("POST", url, body, {**AUTH, "model": "speech-1.6"})
    assert r.status == 200 and r.headers["content-type"] == "audio/wav"
    assert decode_audio(r.body) == ("pcm_s16le", 16000, 0.5)
    rec = fish.received[-1]
    assert rec.headers["model"] == "speech-1.6" and rec.json == body
    r = http("POST", url, {"text": "hello"}, AUTH)
    assert r.headers["content-type"] == "audio/mpeg" and decode_audio(r.body)[:2] == ("mp3", 44100)
    fish.mode = "reject400"
    r = http("POST", url, {"text": "hello"}, AUTH)
    assert r.status == 400 and set(r.json()) == {"status", "message"}


def test_fish_asr(fish: FakeFish) -> None:
    url = f"{fish.base_url}/v1/asr"
    audio = encode_tone(1.0, "flac")
    fields = [("language", "en"), ("ignore_timestamps", "false")]
    r = post_form(url, fields, [("audio", "a.flac", "audio/flac", audio)], AUTH)
    assert r.status == 200
    out = r.json()
    assert out["text"] == "fake fish transcript" and out["duration"] == 1.0
    assert out["segments"] == [{"text": "fake fish transcript", "start": 0.0, "end": 1.0}]
    rec = fish.received[-1]
    assert rec.fields == {"language": ["en"], "ignore_timestamps": ["false"]}
    assert rec.files == {"audio": [("a.flac", "audio/flac", audio)]}
    r = post_form(url, [], [("audio", "a.mp3", "audio/mpeg", b"not audio at all" * 10)], AUTH)
    assert r.status == 400 and r.json()["status"] == 400


# ------------------------------------------------------------------------- Stability


def test_stability_generate(stability: FakeStability) -> None:
    base = f"{stability.base_url}/v2beta/stable-image/generate"
    r = post_form(f"{base}/core", [("prompt", "a cat")])
    assert r.status == 401 and r.json()["name"] == "unauthorized"
    r = post_form(
        f"{base}/ultra",
        [("prompt", "a cat"), ("aspect_ratio", "16:9"), ("output_format", "webp")],
        headers={**AUTH, "Accept": "image/*"},
    )
    assert r.status == 200 and r.headers["content-type"] == "image/webp"
    assert r.headers["finish-reason"] == "SUCCESS" and r.headers["seed"] == "12345"
    assert image_info(r.body) == ("webp", 1344, 768)
    rec = stability.received[-1]
    assert rec.path == "/v2beta/stable-image/generate/ultra"
    assert rec.fields == {"prompt": ["a cat"], "aspect_ratio": ["16:9"], "output_format": ["webp"]}
    r = post_form(
        f"{base}/core",
        [("prompt", "something forbidden"), ("seed", "42")],
        headers={**AUTH, "Accept": "application/json"},
    )
    out = r.json()
    assert out["finish_reason"] == "CONTENT_FILTERED" and out["seed"] == 42
    assert image_info(base64.b64decode(out["image"])) == ("png", 1024, 1024)
    src = make_image(64, 48, "jpeg")
    r = post_form(
        f"{base}/sd3",
        [("prompt", "a cat"), ("mode", "image-to-image"), ("strength", "0.5"), ("output_format", "jpeg")],
        [("image", "in.jpg", "image/jpeg", src)],
        AUTH,
    )
    assert image_info(r.body) == ("jpeg", 64, 48)
    assert stability.received[-1].files == {"image": [("in.jpg", "image/jpeg", src)]}
    r = post_form(f"{base}/core", [("negative_prompt", "x")], headers=AUTH)
    assert r.status == 400 and r.json()["name"] == "bad_request" and r.json()["errors"]
    stability.mode = "fail500"
    r = post_form(f"{base}/core", [("prompt", "a cat")], headers=AUTH)
    assert r.status == 500 and set(r.json()) == {"id", "name", "errors"}
