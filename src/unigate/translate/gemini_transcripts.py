"""OpenAI-format speech to text (`/v1/audio/transcriptions` and `/translations`) on a Gemini
model, which hears audio given as an `inlineData` part and writes what it is asked for: the
request a call becomes, and its answer in OpenAI's shape.

The instruction asks for the words exactly (a transcription) or in English (a translation);
`language` and `prompt` are added to it, as hints, and `temperature` is sent. Gemini writes no
timestamps, so `srt`, `vtt`, `verbose_json` and `diarized_json` answers, which are made of them,
are refused for this route (another route of the model may make them); `json` and `text` are
answered.
"""

from __future__ import annotations

import base64
from typing import Any

from unigate.errors import InvalidRequest
from unigate.translate.gemini_fields import AUDIO_MIME, as_list, as_object

Json = dict[str, Any]
ANSWERED = ("json", "text")
_READ = frozenset({"model", "file", "language", "prompt", "temperature", "response_format"})
_TRANSCRIBE = "Transcribe the speech in this audio exactly, word for word, in the language spoken."
_TRANSLATE = "Translate the speech in this audio into English."
_ONLY = " Answer with the text alone: no title, no notes, no timestamps."


def transcript_request(
    payload: Json, audio: bytes, container: str, translate: bool
) -> tuple[Json, list[str]]:
    """The `generateContent` body for a transcription (or, `translate`, a translation) of
    `audio`, and the fields it could not carry. InvalidRequest for what Gemini cannot answer:
    a timestamped format, or audio in a container it does not hear."""
    fmt = payload.get("response_format") or "json"
    if fmt not in ANSWERED:
        raise InvalidRequest(
            f"This model's route writes no timestamps, so it cannot answer '{fmt}': ask for json or text.",
            param="response_format",
        )
    mime = AUDIO_MIME.get(container)
    if mime is None:
        heard = ", ".join(AUDIO_MIME)
        raise InvalidRequest(f"This model's route hears {heard} audio, not {container}.", param="file")
    instruction = _TRANSLATE if translate else _TRANSCRIBE
    if payload.get("language"):
        instruction += f" The speech is in the language with ISO-639-1 code '{payload['language']}'."
    if payload.get("prompt"):
        instruction += f" Words and style to expect: {payload['prompt']}"
    parts: list[Json] = [{"inlineData": {"mimeType": mime, "data": base64.b64encode(audio).decode()}}]
    parts.append({"text": instruction + _ONLY})
    body: Json = {"contents": [{"role": "user", "parts": parts}]}
    if payload.get("temperature") not in (None, ""):
        body["generationConfig"] = {"temperature": float(payload["temperature"])}
    dropped = sorted(n for n, v in payload.items() if v not in (None, "", []) and n not in _READ)
    return body, dropped


def written(answer: Any) -> tuple[str, int, int]:
    """The text of a Gemini answer, and its prompt's and its text's tokens."""
    body = as_object(answer)
    texts = []
    for candidate in map(as_object, as_list(body.get("candidates"))[:1]):
        for part in map(as_object, as_list(as_object(candidate.get("content")).get("parts"))):
            if isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
    usage = as_object(body.get("usageMetadata"))
    prompt, output = usage.get("promptTokenCount"), usage.get("candidatesTokenCount")
    return "".join(texts).strip(), _count(prompt), _count(output)


def openai_transcript(text: str, prompt: int, output: int) -> Json:
    """OpenAI's `json` answer, with its token usage (as gpt-4o-transcribe reports it)."""
    usage = {
        "type": "tokens",
        "input_tokens": prompt,
        "output_tokens": output,
        "total_tokens": prompt + output,
    }
    return {"text": text, "usage": usage}


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0
