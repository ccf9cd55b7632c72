"""Speech across the two formats, against the real gateway: the OpenAI SDK's `audio.speech` on a
Gemini TTS model (a fake Gemini that speaks PCM as Gemini does), and google-genai asking for AUDIO
output from a model routed to OpenAI's speech API (a fake OpenAI upstream, and the sandbox). The
samples cross as they are; voices are each vendor's own; what cannot be honoured is named. And
OpenAI's transcriptions and translations heard by a Gemini model."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from google.genai import types

from tests.support.cross_rig import CrossRig as Rig
from tests.support.cross_rig import cross_rig
from tests.support.media_fixtures import decode_audio, encode_tone, tone_pcm
from tests.support.net import http
from tests.support.readme import PLACEHOLDER_KEY, PLACEHOLDER_URL, blocks

TTS = "gemini-2.5-flash-preview-tts"
PCM_MIME = "audio/L16;codec=pcm;rate=24000"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    models = [
        {"name": "gemini-voice", "routes": [{"provider": "gem", "model": TTS}]},
        {"name": "openai-voice", "routes": [{"provider": "oa", "model": "tts-1"}]},
        {"name": "gemini-listener", "routes": [{"provider": "gem", "model": "gemini-2.5-flash"}]},
    ]
    workdir = Path(tmp_path_factory.mktemp("gemini-speech"))
    with cross_rig(workdir, models, sandbox={"enabled": True}) as rig:
        yield rig


def _speech(rig: Rig, **fields: Any) -> openai._legacy_response.HttpxBinaryResponseContent:
    return rig.client.audio.speech.create(model="gemini-voice", input="Hello there, friend", **fields)


# ------------------------------------------------------------- OpenAI's speech on Gemini


def test_wav_in_a_gemini_voice(rig: Rig) -> None:
    audio = _speech(rig, voice="Kore", response_format="wav")  # type: ignore[arg-type]
    assert decode_audio(audio.content)[:2] == ("pcm_s16le", 24000)
    assert abs(decode_audio(audio.content)[2] - 0.3) < 0.01  # three words, a tenth of a second each
    call, body, _ = rig.gem.received[-1]
    assert call == f"{TTS}:generateContent?"
    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "Hello there, friend"}]}],
        "generationConfig": {
            "responseModalities": ["AUDIO"],
            "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}},
        },
    }


def test_pcm_is_geminis_samples_as_they_are(rig: Rig) -> None:
    audio = _speech(rig, voice="puck", response_format="pcm")
    assert audio.content == tone_pcm(0.3) and audio.response.headers["content-type"] == "audio/pcm"
    assert rig.gem.received[-1][1]["generationConfig"]["speechConfig"]["voiceConfig"][
        "prebuiltVoiceConfig"
    ] == {"voiceName": "Puck"}


def test_openai_voice_and_compressed_format_are_named(rig: Rig) -> None:
    with rig.client.audio.speech.with_streaming_response.create(
        model="gemini-voice", input="Hi", voice="alloy", speed=1.5
    ) as answer:
        data = answer.read()
        named = answer.headers["x-unigate-dropped-fields"]
        assert answer.headers["content-type"] == "audio/wav"
    assert decode_audio(data)[0] == "pcm_s16le"  # mp3 was asked (the default): a WAV comes
    assert named == "response_format, speed, voice"
    assert "speechConfig" not in rig.gem.received[-1][1]["generationConfig"]  # Gemini's default voice


def test_instructions_lead_the_text(rig: Rig) -> None:
    _speech(rig, voice="Kore", instructions="Say cheerfully.", response_format="pcm")
    assert rig.gem.received[-1][1]["contents"][0]["parts"] == [
        {"text": "Say cheerfully: Hello there, friend"}
    ]


def test_sse_events(rig: Rig) -> None:
    body = {
        "model": "gemini-voice",
        "input": "one two",
        "voice": "Kore",
        "stream_format": "sse",
        "response_format": "pcm",
    }
    res = http("POST", rig.gw.base_url + "/v1/audio/speech", body, {"Authorization": f"Bearer {rig.key}"})
    assert res.status == 200 and res.headers["content-type"].startswith("text/event-stream")
    events = [orjson.loads(line[6:]) for line in res.body.split(b"\n") if line.startswith(b"data: ")]
    assert [e["type"] for e in events] == ["speech.audio.delta", "speech.audio.done"]
    assert base64.b64decode(events[0]["audio"]) == tone_pcm(0.2)
    assert events[1]["usage"] == {"input_tokens": 9, "output_tokens": 5, "total_tokens": 14}


def test_blocked_text_is_the_clients_400(rig: Rig) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        rig.client.audio.speech.create(model="gemini-voice", input="a forbidden word", voice="Kore")
    assert "safety" in refused.value.message


# ------------------------------------------------------------- Gemini's speech on OpenAI


def _spoken(answer: types.GenerateContentResponse) -> tuple[str, bytes]:
    part = answer.candidates[0].content.parts[0]  # type: ignore[index, union-attr]
    assert part.inline_data is not None
    return part.inline_data.mime_type or "", part.inline_data.data or b""


def _voice(name: str) -> types.GenerateContentConfig:
    voice = types.VoiceConfig(prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=name))
    return types.GenerateContentConfig(
        response_modalities=["AUDIO"], speech_config=types.SpeechConfig(voice_config=voice)
    )


def test_openai_voice_speaks_pcm_for_gemini(rig: Rig) -> None:
    answer = rig.genai.models.generate_content(
        model="openai-voice", contents="Read this aloud", config=_voice("coral")
    )
    assert _spoken(answer) == (PCM_MIME, tone_pcm(1.0))  # the fake's second of tone, as it sent it
    assert rig.oa.received[-1].json == {
        "model": "tts-1",
        "input": "Read this aloud",
        "voice": "coral",
        "response_format": "pcm",
    }


def test_a_gemini_voice_on_openai_is_named(rig: Rig) -> None:
    body = {
        "contents": [{"parts": [{"text": "Hi"}]}],
        "generationConfig": {
            "responseModalities": ["AUDIO"],
            "speechConfig": {
                "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}},
                "languageCode": "en-US",
            },
        },
    }
    res = http(
        "POST",
        rig.gw.base_url + "/v1beta/models/openai-voice:generateContent",
        body,
        {"x-goog-api-key": rig.key},
    )
    assert res.status == 200, res.body
    assert res.headers["x-unigate-dropped-fields"] == (
        "generationConfig.speechConfig.languageCode, generationConfig.speechConfig.voiceConfig"
    )
    assert (rig.oa.received[-1].json or {})["voice"] == "alloy"


def test_the_sandbox_speaks_for_gemini_clients(rig: Rig) -> None:
    answer = rig.genai.models.generate_content(
        model="sandbox-tts", contents="Hello sandbox", config=_voice("alloy")
    )
    mime, pcm = _spoken(answer)
    assert mime == PCM_MIME and decode_audio(pcm, pcm_rate=24000)[2] > 0.1


def test_a_gemini_stream_is_one_event(rig: Rig) -> None:
    chunks = list(
        rig.genai.models.generate_content_stream(model="openai-voice", contents="Hi", config=_voice("echo"))
    )
    assert len(chunks) == 1 and _spoken(chunks[0]) == (PCM_MIME, tone_pcm(1.0))


def test_the_docs_example(rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/audio.md's example as written, on this rig."""
    (block,) = [
        b for b in blocks() if b.runner == "run by tests/e2e/test_gemini_speech.py::test_the_docs_example"
    ]
    code = block.text.replace(PLACEHOLDER_URL, rig.gw.base_url).replace(PLACEHOLDER_KEY, rig.key)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<example>", "exec"), {})
    assert decode_audio((tmp_path / "welcome.wav").read_bytes())[:2] == ("pcm_s16le", 24000)
    assert rig.gem.received[-1][1]["contents"][0]["parts"] == [{"text": "Say cheerfully: Welcome aboard!"}]


# ------------------------------------------------------- OpenAI's speech to text on Gemini


def test_transcription_hears_the_audio(rig: Rig) -> None:
    audio = encode_tone(0.5, "wav")
    answer = rig.client.audio.transcriptions.create(
        model="gemini-listener",
        file=("talk.wav", audio),
        language="de",
        prompt="Namen: Jörg",
        temperature=0.2,
    )
    assert answer.text == f"I heard {len(audio)} bytes of audio/wav."
    parts = rig.gem.received[-1][1]["contents"][0]["parts"]
    assert base64.b64decode(parts[0]["inlineData"]["data"]) == audio
    assert "word for word" in parts[1]["text"] and "'de'" in parts[1]["text"] and "Jörg" in parts[1]["text"]
    assert rig.gem.received[-1][1]["generationConfig"] == {"temperature": 0.2}


def test_translation_and_text_format(rig: Rig) -> None:
    audio = encode_tone(0.3, "mp3")
    text = rig.client.audio.translations.create(
        model="gemini-listener", file=("a.mp3", audio), response_format="text"
    )
    assert text == f"(English) I heard {len(audio)} bytes of audio/mp3."
    assert "into English" in rig.gem.received[-1][1]["contents"][0]["parts"][1]["text"]


@pytest.mark.parametrize("fmt", ["srt", "vtt", "verbose_json"])
def test_timestamped_formats_are_refused_by_this_route(rig: Rig, fmt: str) -> None:
    before = len(rig.gem.received)
    with pytest.raises(openai.BadRequestError) as refused:
        rig.client.audio.transcriptions.create(
            model="gemini-listener",
            file=("a.wav", encode_tone(0.2, "wav")),
            response_format=fmt,  # type: ignore[call-overload]
        )
    assert "timestamps" in refused.value.message and len(rig.gem.received) == before


WEBM = b"\x1a\x45\xdf\xa3" + bytes(64)  # an EBML header: what the gateway sniffs as WebM


def test_webm_is_refused_by_this_route(rig: Rig) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        rig.client.audio.transcriptions.create(model="gemini-listener", file=("a.webm", WEBM))
    assert "webm" in refused.value.message
