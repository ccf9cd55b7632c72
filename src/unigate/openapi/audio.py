"""The audio family: OpenAI's transcriptions, translations and speech (`api/openai/audio.py`) and
Fish Audio's TTS and ASR (`api/vendors/fish.py`). Form fields arrive as text, so numbers and booleans
in multipart bodies are their text spellings; an empty optional field means its default."""

from __future__ import annotations

from unigate.edge.media_types import SPEECH_CONTENT_TYPES
from unigate.openapi.schema import (
    JSON,
    SSE,
    Operation,
    Schema,
    any_of,
    array,
    binary,
    declared_form,
    declared_json,
    dropped_fields,
    header,
    integer,
    json_response,
    json_text,
    number,
    obj,
    ref,
    response,
    sse_event,
    string,
)
from unigate.shapes.audio import SPEECH, TRANSCRIPTION, TRANSLATION
from unigate.shapes.fish import ASR as FISH_ASR
from unigate.shapes.fish import TTS as FISH_TTS

TAG = "audio"
_TEXT = "text/plain"  # sent as `text/plain; charset=utf-8`


def schemas() -> dict[str, Schema]:
    segment = obj(
        {"id": integer(0), "start": number(), "end": number(), "text": string()},
        ["id", "start", "end", "text"],
    )
    word = obj({"word": string(), "start": number(), "end": number()}, ["word", "start", "end"])
    return {
        "Transcription": obj(
            {
                "text": string(),
                "usage": obj({"type": string(), "seconds": number()}),
                "task": string("transcribe or translate (verbose_json)."),
                "language": string(),
                "duration": number(0),
                "segments": array(segment),
                "words": array(word),
            },
            ["text"],
            "json: `text` (and `usage`); verbose_json adds task, language, duration, segments, words.",
        ),
        "FishTranscription": obj(
            {
                "text": string(),
                "duration": number(0),
                "segments": array(
                    obj({"text": string(), "start": number(), "end": number()}, ["text", "start", "end"])
                ),
            },
            ["text", "duration", "segments"],
        ),
    }


def _audio_types() -> dict[str, Schema]:
    return {mime: binary() for mime in dict.fromkeys(SPEECH_CONTENT_TYPES.values())}


def _speech_event() -> Schema:
    delta = obj(
        {
            "type": {"enum": ["speech.audio.delta", "speech.audio.done"]},
            "audio": string("base64 audio (delta events)."),
            "usage": obj(
                {"input_tokens": integer(0), "output_tokens": integer(0), "total_tokens": integer(0)}
            ),
        },
        ["type"],
    )
    return sse_event(
        json_text(any_of(delta, ref("OpenAIError"))), "A delta of the audio, or the end with usage."
    )


def operations() -> list[Operation]:
    transcript = {
        "200": response(
            "JSON for json and verbose_json; text for text, srt and vtt.",
            {JSON: ref("Transcription"), _TEXT: string()},
        )
    }
    speech = {
        "200": response(
            "The audio, streamed while it is encoded (mp3 audio/mpeg, opus audio/ogg, aac, flac, wav, pcm: "
            "raw 24 kHz 16-bit mono); with stream_format sse, `speech.audio.delta` events. A Gemini TTS "
            "route answers pcm, or wav for any other format asked.",
            {**_audio_types(), SSE: _speech_event()},
            dropped_fields(),
        )
    }
    fish_model = header(
        "model", string(), "The voice model; `media.fish_tts_model` (`fish_asr_model`) when absent."
    )
    return [
        Operation(
            "POST",
            "/v1/audio/transcriptions",
            "createTranscription",
            "Transcribe audio (OpenAI format)",
            TAG,
            transcript,
            declared_form(TRANSCRIPTION),
        ),
        Operation(
            "POST",
            "/v1/audio/translations",
            "createTranslation",
            "Translate audio to English (OpenAI format)",
            TAG,
            transcript,
            declared_form(TRANSLATION),
        ),
        Operation(
            "POST",
            "/v1/audio/speech",
            "createSpeech",
            "Text to speech (OpenAI format)",
            TAG,
            speech,
            declared_json(
                SPEECH,
                {
                    "model": "sandbox-tts",
                    "input": "Hello from the gateway",
                    "voice": "alloy",
                    "response_format": "wav",
                },
            ),
        ),
        Operation(
            "POST",
            "/fish/v1/tts",
            "fishTTS",
            "Text to speech (Fish Audio format)",
            TAG,
            {
                "200": response(
                    "The audio, streamed while it is encoded.",
                    {mime: binary() for mime in ("audio/mpeg", "audio/wav", "audio/pcm", "audio/ogg")},
                )
            },
            declared_json(FISH_TTS, {"text": "Hello from the gateway", "format": "wav"}),
            parameters=(fish_model,),
        ),
        Operation(
            "POST",
            "/fish/v1/asr",
            "fishASR",
            "Speech to text (Fish Audio format)",
            TAG,
            {"200": json_response("The text with timed segments.", ref("FishTranscription"))},
            declared_form(FISH_ASR),
            parameters=(fish_model,),
        ),
    ]
