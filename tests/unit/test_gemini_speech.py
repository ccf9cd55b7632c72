"""Speech across the formats (`translate/gemini_speech.py`): OpenAI's speech fields on Gemini,
Gemini's TTS answers read back, Gemini's speech calls on OpenAI."""

from __future__ import annotations

import base64
import io
import wave
from typing import Any

import pytest

from unigate.errors import InvalidRequest, UpstreamRejected
from unigate.translate.gemini_speech import (
    gemini_audio_answer,
    speech_ask,
    speech_format,
    speech_request,
    spoken,
    wav,
)


def _voice(request: dict[str, Any]) -> Any:
    return (
        request["generationConfig"].get("speechConfig", {}).get("voiceConfig", {}).get("prebuiltVoiceConfig")
    )


@pytest.mark.parametrize(
    ("voice", "used", "named"),
    [("Kore", "Kore", False), ("kore", "Kore", False), ("alloy", None, True), ({"id": "v1"}, None, True)],
)
def test_voices(voice: Any, used: str | None, named: bool) -> None:
    request, dropped = speech_request({"model": "m", "input": "hi", "voice": voice, "response_format": "pcm"})
    assert _voice(request) == ({"voiceName": used} if used else None)
    assert ("voice" in dropped) is named


@pytest.mark.parametrize(
    ("asked", "answered", "named"),
    [
        ("pcm", "pcm", False),
        ("wav", "wav", False),
        ("mp3", "wav", True),
        (None, "wav", True),
        ("flac", "wav", True),
    ],
)
def test_formats(asked: str | None, answered: str, named: bool) -> None:
    payload = {"model": "m", "input": "hi", "voice": "Kore", **({"response_format": asked} if asked else {})}
    assert speech_format(payload) == answered
    assert ("response_format" in speech_request(payload)[1]) is named


def test_instructions_lead_and_other_fields_are_named() -> None:
    payload = {
        "model": "m",
        "input": "hi",
        "voice": "Kore",
        "instructions": "Whisper.",
        "speed": 2,
        "response_format": "wav",
    }
    request, dropped = speech_request(payload)
    assert request["contents"] == [{"role": "user", "parts": [{"text": "Whisper: hi"}]}]
    assert dropped == ["speed"]


def _answer(data: bytes, mime: str = "audio/L16;codec=pcm;rate=24000") -> dict[str, Any]:
    part = {"inlineData": {"mimeType": mime, "data": base64.urlsafe_b64encode(data).decode()}}
    return {
        "candidates": [{"content": {"parts": [part]}}],
        "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 25},
    }


def test_spoken_reads_samples_rate_and_tokens() -> None:
    assert spoken(_answer(b"\x01\x02" * 10, "audio/L16;codec=pcm;rate=16000")) == (
        b"\x01\x02" * 10,
        16000,
        4,
        25,
    )


def test_spoken_without_audio_is_empty_and_blocked_is_refused() -> None:
    assert (
        spoken({"candidates": [{"content": {"parts": [{"text": "no"}]}, "finishReason": "OTHER"}]})[0] == b""
    )
    with pytest.raises(UpstreamRejected) as refused:
        spoken({"promptFeedback": {"blockReason": "SAFETY"}})
    assert refused.value.status == 400


def test_wav_wraps_the_samples() -> None:
    pcm = b"\x00\x10" * 2400
    with wave.open(io.BytesIO(wav(pcm, 24000))) as read:
        assert (read.getnchannels(), read.getsampwidth(), read.getframerate()) == (1, 2, 24000)
        assert read.readframes(read.getnframes()) == pcm


def _gemini(voice: str | None, **speech: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"responseModalities": ["AUDIO"]}
    if voice is not None:
        speech["voiceConfig"] = {"prebuiltVoiceConfig": {"voiceName": voice}}
    if speech:
        config["speechConfig"] = speech
    return {"contents": [{"role": "user", "parts": [{"text": "Say hi"}]}], "generationConfig": config}


@pytest.mark.parametrize(
    ("voice", "used", "named"),
    [("coral", "coral", []), ("Coral", "coral", []), ("Kore", "alloy", ["voiceConfig"]), (None, "alloy", [])],
)
def test_gemini_speech_on_openai(voice: str | None, used: str, named: list[str]) -> None:
    payload, mime, dropped = speech_ask(_gemini(voice))
    assert mime == "audio/L16;codec=pcm;rate=24000"
    assert payload == {"input": "Say hi", "voice": used, "response_format": "pcm"}
    assert dropped == [f"generationConfig.speechConfig.{n}" for n in named]


def test_gemini_speech_names_what_openai_lacks() -> None:
    _, _, dropped = speech_ask(_gemini("coral", languageCode="de-DE", multiSpeakerVoiceConfig={}))
    assert dropped == [
        "generationConfig.speechConfig.languageCode",
        "generationConfig.speechConfig.multiSpeakerVoiceConfig",
    ]
    with pytest.raises(InvalidRequest):
        speech_ask({"contents": [{"role": "model", "parts": [{"text": "x"}]}]})


def test_gemini_audio_answer() -> None:
    answer = gemini_audio_answer(b"\x00\x01", "audio/L16;codec=pcm;rate=24000", "m")
    part = answer["candidates"][0]["content"]["parts"][0]["inlineData"]
    assert part == {"mimeType": "audio/L16;codec=pcm;rate=24000", "data": "AAE="}
    answer = gemini_audio_answer(b"\x00\x01", "audio/wav", "m")
    data = base64.b64decode(answer["candidates"][0]["content"]["parts"][0]["inlineData"]["data"])
    assert data[:4] == b"RIFF" and data.endswith(b"\x00\x01")


@pytest.mark.parametrize(
    ("asked", "mime", "named"),
    [
        ("AUDIO_WAV", "audio/wav", False),
        ("AUDIO_L16", "audio/L16;codec=pcm;rate=24000", False),
        ("AUDIO_MP3", "audio/L16;codec=pcm;rate=24000", True),
    ],
)
def test_newer_tts_response_format(asked: str, mime: str, named: bool) -> None:
    request = _gemini("coral")
    request["generationConfig"]["responseFormat"] = {"audio": {"mimeType": asked}}
    request["contents"][0]["parts"][0]["speechMetadata"] = {"style": "calm"}
    _, got, dropped = speech_ask(request)
    assert got == mime and ("generationConfig.responseFormat" in dropped) is named
    assert "contents.parts.speechMetadata" in dropped
