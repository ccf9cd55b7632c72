"""OpenAI's speech to text on a Gemini model (`translate/gemini_transcripts.py`): the request,
what it refuses, and the answer."""

from __future__ import annotations

import base64

import pytest

from unigate.errors import InvalidRequest
from unigate.translate.gemini_transcripts import openai_transcript, transcript_request, written


def test_a_transcription_is_the_audio_and_an_instruction() -> None:
    payload = {
        "model": "m",
        "language": "fr",
        "prompt": "Zoë",
        "temperature": "0.3",
        "response_format": "text",
    }
    body, dropped = transcript_request(payload, b"RIFF-audio", "wav", translate=False)
    audio, instruction = body["contents"][0]["parts"]
    assert audio == {
        "inlineData": {"mimeType": "audio/wav", "data": base64.b64encode(b"RIFF-audio").decode()}
    }
    assert (
        "word for word" in instruction["text"]
        and "'fr'" in instruction["text"]
        and "Zoë" in instruction["text"]
    )
    assert body["generationConfig"] == {"temperature": 0.3} and dropped == []


def test_a_translation_asks_for_english_and_names_the_rest() -> None:
    body, dropped = transcript_request(
        {"model": "m", "chunking_strategy": "auto"}, b"x", "mp3", translate=True
    )
    assert "into English" in body["contents"][0]["parts"][1]["text"] and "generationConfig" not in body
    assert dropped == ["chunking_strategy"]


@pytest.mark.parametrize(("payload", "container", "param"), [
    ({"response_format": "srt"}, "wav", "response_format"),
    ({"response_format": "verbose_json"}, "wav", "response_format"),
    ({}, "webm", "file"),
    ({}, "mp4", "file"),
])  # fmt: skip
def test_what_gemini_cannot_answer_is_refused(payload: dict[str, str], container: str, param: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        transcript_request(payload, b"x", container, translate=False)
    assert refused.value.param == param


def test_written_and_the_answer() -> None:
    answer = {
        "candidates": [{"content": {"parts": [{"text": "hm", "thought": True}, {"text": " Bonjour. "}]}}],
        "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 3},
    }
    assert written(answer) == ("Bonjour.", 40, 3)
    assert openai_transcript("Bonjour.", 40, 3) == {
        "text": "Bonjour.",
        "usage": {"type": "tokens", "input_tokens": 40, "output_tokens": 3, "total_tokens": 43},
    }
