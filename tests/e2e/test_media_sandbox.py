"""Audio and image families through the sandbox, against the real server process: the real
`openai` SDK (transcriptions, translations, streamed speech, image generation and edits),
`google-genai` for image content, plain HTTP for Fish and Stability. Every binary answer is
decoded (PyAV for audio, Pillow for images) and checked; bad input gets the family's 4xx."""

from __future__ import annotations

import base64
import io
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from google import genai
from google.genai import types

from tests.support.media_fixtures import decode_audio, encode_tone, image_info, make_image, make_mask
from tests.support.net import http
from tests.support.served import ServedGateway

MB = 1024 * 1024


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    config = {
        "sandbox": {"enabled": True},  # the sandbox's models beside a config file
        "limits": {"max_audio_upload": 2 * MB, "max_image_upload": 4 * MB},
    }
    with ServedGateway(Path(tmp_path_factory.mktemp("media-sandbox")), config=config) as g:
        yield g


@pytest.fixture(scope="module")
def key(gw: ServedGateway) -> str:
    return gw.create_key()


@pytest.fixture(scope="module")
def client(gw: ServedGateway, key: str) -> Iterator[openai.OpenAI]:
    # Closed here: a module-scoped client outlives the per-test closing of SDK clients, and one
    # finalized by the cycle collector may drop its pooled socket unclosed (a ResourceWarning).
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0) as client:
        yield client


# --- speech to text -----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["wav", "mp3", "flac", "opus"])
def test_transcription_reports_the_real_duration(client: openai.OpenAI, fmt: str) -> None:
    audio = encode_tone(3.0, fmt)
    result = client.audio.transcriptions.create(
        model="sandbox-transcribe",
        file=(f"tone.{'ogg' if fmt == 'opus' else fmt}", audio),
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
    )
    assert abs(result.duration - 3.0) < 0.1
    assert result.text and result.segments and result.words
    assert all(0 <= w.start <= w.end <= result.duration + 1e-6 for w in result.words)


def test_transcription_formats(client: openai.OpenAI) -> None:
    audio = encode_tone(2.0, "wav")
    plain = client.audio.transcriptions.create(model="sandbox-transcribe", file=("a.wav", audio))
    assert plain.text
    text = client.audio.transcriptions.create(
        model="sandbox-transcribe", file=("a.wav", audio), response_format="text"
    )
    assert isinstance(text, str) and text.strip() == plain.text
    srt = client.audio.transcriptions.create(
        model="sandbox-transcribe", file=("a.wav", audio), response_format="srt"
    )
    assert isinstance(srt, str) and "-->" in srt and srt.startswith("1\n")
    vtt = client.audio.transcriptions.create(
        model="sandbox-transcribe", file=("a.wav", audio), response_format="vtt"
    )
    assert isinstance(vtt, str) and vtt.startswith("WEBVTT")


def test_text_formats_are_text_plain(gw: ServedGateway, key: str) -> None:
    body, ctype = _form(
        {"model": "sandbox-transcribe", "response_format": "srt"}, {"file": ("a.wav", encode_tone(1, "wav"))}
    )
    res = http("POST", gw.base_url + "/v1/audio/transcriptions", body, {**_auth(key), "Content-Type": ctype})
    assert res.status == 200 and res.headers["content-type"].startswith("text/plain")


def test_translation(client: openai.OpenAI) -> None:
    result = client.audio.translations.create(
        model="sandbox-transcribe", file=("a.mp3", encode_tone(1.5, "mp3")), response_format="verbose_json"
    )
    assert result.language == "english" and abs(float(result.duration) - 1.5) < 0.1 and result.text


# --- text to speech -----------------------------------------------------------------------

CODECS = {"mp3": "mp3", "opus": "opus", "aac": "aac", "flac": "flac", "wav": "pcm_s16le"}
CONTENT_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}


@pytest.mark.parametrize("fmt", list(CONTENT_TYPES))
def test_speech_streams_real_audio(client: openai.OpenAI, fmt: str) -> None:
    text = "The gateway speaks every format. " * 3
    with client.audio.speech.with_streaming_response.create(
        model="sandbox-tts",
        voice="alloy",
        input=text,
        response_format=fmt,  # type: ignore[arg-type]
    ) as resp:
        assert resp.headers["content-type"] == CONTENT_TYPES[fmt]
        chunks = list(resp.iter_bytes())
    data = b"".join(chunks)
    expected = len(text) * 0.06
    if fmt == "pcm":
        assert abs(len(data) / 2 / 24000 - expected) < 0.3
        return
    codec, _, duration = decode_audio(data)
    assert codec == CODECS[fmt] and abs(duration - expected) < 0.3


def test_speech_is_deterministic_and_speed_matters(client: openai.OpenAI) -> None:
    def say(speed: float) -> bytes:
        return client.audio.speech.create(
            model="sandbox-tts", voice="nova", input="Hello there, world.", response_format="wav", speed=speed
        ).content

    one, again, fast = say(1.0), say(1.0), say(2.0)
    assert one == again and decode_audio(fast)[2] < decode_audio(one)[2] * 0.7


# --- images -------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "size"), [("png", "1024x1024"), ("jpeg", "1536x1024"), ("webp", "512x768")])
def test_image_generation(client: openai.OpenAI, fmt: str, size: str) -> None:
    result = client.images.generate(
        model="sandbox-image", prompt="a red lighthouse", size=size, output_format=fmt, n=2
    )  # type: ignore[arg-type]
    assert result.data is not None and len(result.data) == 2
    w, h = (int(v) for v in size.split("x"))
    images = [base64.b64decode(d.b64_json or "") for d in result.data]
    assert [image_info(i) for i in images] == [(fmt, w, h)] * 2 and images[0] != images[1]


def test_image_generation_as_url(client: openai.OpenAI) -> None:
    result = client.images.generate(
        model="sandbox-image", prompt="a tree", size="256x256", response_format="url"
    )
    assert result.data and result.data[0].url
    res = http("GET", result.data[0].url)
    assert res.status == 200 and image_info(res.body) == ("png", 256, 256)


def test_image_edit_one_and_several_and_mask(client: openai.OpenAI) -> None:
    from PIL import Image

    original = make_image(256, 256, "png")
    one = client.images.edit(model="sandbox-image", image=("a.png", original), prompt="make it blue")
    edited = base64.b64decode(one.data[0].b64_json or "")  # type: ignore[index]
    assert image_info(edited) == ("png", 256, 256)
    a = Image.open(io.BytesIO(original)).convert("RGB")
    b = Image.open(io.BytesIO(edited)).convert("RGB")
    changed = sum(1 for p, q in zip(a.getdata(), b.getdata(), strict=True) if p != q)
    assert changed > 256 * 256 // 2  # visibly transformed
    several = client.images.edit(
        model="sandbox-image",
        image=[("a.png", original), ("b.png", make_image(128, 128, "png", (10, 200, 10)))],
        prompt="combine",
        size="512x512",
    )
    assert image_info(base64.b64decode(several.data[0].b64_json or "")) == ("png", 512, 512)  # type: ignore[index]
    masked = client.images.edit(
        model="sandbox-image",
        image=("a.png", original),
        mask=("m.png", make_mask(256, 256)),
        prompt="left only",
    )
    m = Image.open(io.BytesIO(base64.b64decode(masked.data[0].b64_json or ""))).convert("RGB")  # type: ignore[index]
    assert m.getpixel((250, 128)) == a.getpixel((250, 128))  # under the opaque half: untouched
    assert m.getpixel((5, 128)) != a.getpixel((5, 128))


def test_gemini_image_content(gw: ServedGateway, key: str) -> None:
    client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=gw.base_url))
    resp = client.models.generate_content(
        model="sandbox-image",
        contents="a purple mountain at dawn",
        config=types.GenerateContentConfig(
            response_modalities=["TEXT", "IMAGE"], image_config=types.ImageConfig(aspect_ratio="16:9")
        ),
    )
    parts = resp.candidates[0].content.parts  # type: ignore[index, union-attr]
    inline = [p.inline_data for p in parts or [] if p.inline_data]
    assert inline and inline[0].mime_type == "image/png"
    fmt, w, h = image_info(inline[0].data or b"")
    assert fmt == "png" and w > h
    assert any(p.text for p in parts or [])


# --- Fish and Stability over plain HTTP ---------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "codec"), [("mp3", "mp3"), ("wav", "pcm_s16le"), ("opus", "opus"), ("pcm", None)]
)
def test_fish_tts(gw: ServedGateway, key: str, fmt: str, codec: str | None) -> None:
    body = {"text": "Fish speaks too.", "format": fmt, "sample_rate": 44100 if fmt != "opus" else 48000}
    res = http("POST", gw.base_url + "/fish/v1/tts", body, {**_auth(key), "model": "s1"})
    assert res.status == 200 and res.headers["content-type"] == CONTENT_TYPES[fmt]
    if codec is None:
        assert len(res.body) > 44100  # raw 16-bit mono: ~1 s of samples
        return
    got_codec, rate, duration = decode_audio(res.body)
    assert got_codec == codec and duration > 0.5 and rate == (48000 if fmt == "opus" else 44100)


def test_fish_asr(gw: ServedGateway, key: str) -> None:
    body, ctype = _form(
        {"language": "en", "ignore_timestamps": "false"}, {"audio": ("a.wav", encode_tone(2.5, "wav"))}
    )
    res = http("POST", gw.base_url + "/fish/v1/asr", body, {**_auth(key), "Content-Type": ctype})
    assert res.status == 200
    out = res.json()
    assert (
        abs(out["duration"] - 2.5) < 0.1
        and out["text"]
        and out["segments"][-1]["end"] <= out["duration"] + 1e-6
    )


@pytest.mark.parametrize("variant", ["ultra", "core", "sd3"])
def test_stability_image_and_json(gw: ServedGateway, key: str, variant: str) -> None:
    url = f"{gw.base_url}/stability/v2beta/stable-image/generate/{variant}"
    body, ctype = _form(
        {"prompt": "a fox", "aspect_ratio": "16:9", "output_format": "jpeg", "seed": "42"}, {}
    )
    res = http("POST", url, body, {**_auth(key), "Content-Type": ctype, "Accept": "image/*"})
    assert res.status == 200 and res.headers["content-type"] == "image/jpeg"
    assert res.headers["finish-reason"] == "SUCCESS" and res.headers["seed"] == "42"
    fmt, w, h = image_info(res.body)
    assert fmt == "jpeg" and w > h
    res = http("POST", url, body, {**_auth(key), "Content-Type": ctype, "Accept": "application/json"})
    out = res.json()
    assert out["finish_reason"] == "SUCCESS" and out["seed"] == 42
    assert image_info(base64.b64decode(out["image"]))[0] == "jpeg"


# --- bad input: the family's own 4xx, never a 500 -----------------------------------------


def test_json_where_multipart_is_required(gw: ServedGateway, key: str) -> None:
    res = http("POST", gw.base_url + "/v1/audio/transcriptions", {"model": "sandbox-transcribe"}, _auth(key))
    assert res.status == 400 and res.json()["error"]["code"] == "invalid_content_type"
    res = http(
        "POST", gw.base_url + "/stability/v2beta/stable-image/generate/core", {"prompt": "x"}, _auth(key)
    )
    assert res.status == 400 and "errors" in res.json()


def test_missing_file_corrupt_audio_and_wrong_format(gw: ServedGateway, key: str) -> None:
    url = gw.base_url + "/v1/audio/transcriptions"
    cases = [
        ({"model": "sandbox-transcribe"}, {}, "missing_required_parameter"),
        (
            {"model": "sandbox-transcribe"},
            {"file": ("a.wav", b"not audio at all" * 10)},
            "invalid_file_format",
        ),
        (
            {"model": "sandbox-transcribe"},
            {"file": ("a.wav", b"RIFF\x00\x00\x00\x00WAVEfmt garbage")},
            "invalid_file",
        ),
        (
            {"model": "sandbox-transcribe", "response_format": "mp4"},
            {"file": ("a.wav", encode_tone(1, "wav"))},
            "invalid_value",
        ),
    ]
    for fields, files, code in cases:
        body, ctype = _form(fields, files)
        res = http("POST", url, body, {**_auth(key), "Content-Type": ctype})
        assert res.status == 400, (code, res.body)
        assert res.json()["error"]["code"] == code
    body, ctype = _form({}, {"audio": ("a.mp3", b"\x00" * 100)})
    res = http("POST", gw.base_url + "/fish/v1/asr", body, {**_auth(key), "Content-Type": ctype})
    assert res.status == 400 and set(res.json()) == {"status", "message"}


def test_bad_speech_and_image_requests(gw: ServedGateway, key: str) -> None:
    url = gw.base_url + "/v1/audio/speech"
    for body in (
        {"model": "sandbox-tts", "voice": "alloy"},
        {"model": "sandbox-tts", "voice": "alloy", "input": "x", "response_format": "ogg"},
        {"model": "sandbox-tts", "voice": "alloy", "input": "x", "speed": 9},
        {"model": "sandbox-tts", "voice": "alloy", "input": "x" * 5000},
    ):
        res = http("POST", url, body, _auth(key))
        assert res.status == 400 and res.json()["error"]["param"] in ("input", "response_format", "speed")
    res = http("POST", gw.base_url + "/v1/images/generations", {"prompt": "x", "size": "big"}, _auth(key))
    assert res.status == 400 and res.json()["error"]["param"] == "size"
    body, ctype = _form({"prompt": "x"}, {"image": ("a.png", b"GIF89a not a png")})
    res = http("POST", gw.base_url + "/v1/images/edits", body, {**_auth(key), "Content-Type": ctype})
    assert res.status == 400


def test_upload_over_the_limit_is_413(gw: ServedGateway, key: str) -> None:
    body, ctype = _form(
        {"model": "sandbox-transcribe"}, {"file": ("a.wav", encode_tone(60, "wav"))}
    )  # ~2.9 MB
    res = http("POST", gw.base_url + "/v1/audio/transcriptions", body, {**_auth(key), "Content-Type": ctype})
    assert res.status == 413 and res.json()["error"]["type"] == "invalid_request_error"


def test_multipart_padding_and_huge_part_headers_fail_fast(gw: ServedGateway, key: str) -> None:
    url = gw.base_url + "/v1/audio/transcriptions"
    padded = (
        b"\r\n" * (MB // 2) + b'--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nx\r\n--b--\r\n'
    )
    huge = (
        b'--b\r\nContent-Disposition: form-data; name="model"\r\nX-Pad: '
        + b"a" * 200_000
        + b"\r\n\r\nx\r\n--b--\r\n"
    )
    for body in (padded, huge, b"--" + b"b" * 100 + b"\r\n"):
        start = time.monotonic()
        res = http("POST", url, body, {**_auth(key), "Content-Type": "multipart/form-data; boundary=b"})
        assert res.status == 400 and time.monotonic() - start < 5
    long_boundary = "multipart/form-data; boundary=" + "b" * 100
    res = http("POST", url, b"x", {**_auth(key), "Content-Type": long_boundary})
    assert res.status == 400


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _form(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = "unigate-test-boundary"
    out = io.BytesIO()
    for name, value in fields.items():
        out.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    for name, (filename, data) in files.items():
        out.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n".encode()
        )
        out.write(data + b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"
