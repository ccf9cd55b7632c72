"""Speech across the two formats: OpenAI's `/v1/audio/speech` on Gemini's TTS models
(`generateContent` with `responseModalities: ["AUDIO"]`), and a Gemini call asking for AUDIO
output on OpenAI's speech API. Both vendors' raw audio is 16-bit little-endian mono PCM at
24 kHz (OpenAI's `pcm`, Gemini's `audio/L16;codec=pcm;rate=24000`), so audio crosses as it is:
an OpenAI client gets `pcm`, or `wav` (the same samples with a RIFF header); a compressed format
(`mp3`, the default, `opus`, `aac`, `flac`) is answered as `wav` and named, as the gateway
carries no audio encoder.

Voices are each vendor's own: a Gemini voice name (`Kore`, `Puck`…) is used on Gemini and an
OpenAI one (`alloy`, `coral`…) on OpenAI; another is named and the upstream's default voice
speaks. OpenAI's `instructions` lead the text, as Gemini's TTS takes direction ("Say
cheerfully: …").
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from unigate.errors import UpstreamRejected
from unigate.translate.gemini_fields import as_list, as_object, blob_bytes
from unigate.translate.gemini_fields import field as read
from unigate.translate.gemini_prompt import read_prompt

Json = dict[str, Any]
PCM_RATE = 24_000
PCM_MIME = f"audio/L16;codec=pcm;rate={PCM_RATE}"
WAV_MIME = "audio/wav"
GEMINI_VOICES = {
    name.lower(): name
    for name in [
        "Zephyr",
        "Puck",
        "Charon",
        "Kore",
        "Fenrir",
        "Leda",
        "Orus",
        "Aoede",
        "Callirrhoe",
        "Autonoe",
        "Enceladus",
        "Iapetus",
        "Umbriel",
        "Algieba",
        "Despina",
        "Erinome",
        "Algenib",
        "Rasalgethi",
        "Laomedeia",
        "Achernar",
        "Alnilam",
        "Schedar",
        "Gacrux",
        "Pulcherrima",
        "Achird",
        "Zubenelgenubi",
        "Vindemiatrix",
        "Sadachbia",
        "Sadaltager",
        "Sulafat",
    ]
}
OPENAI_VOICES = frozenset(
    [
        "alloy",
        "ash",
        "ballad",
        "coral",
        "echo",
        "fable",
        "nova",
        "onyx",
        "sage",
        "shimmer",
        "verse",
        "marin",
        "cedar",
    ]
)
DEFAULT_OPENAI_VOICE = "alloy"  # OpenAI's speech API needs a voice
_OPENAI_READ = frozenset({"model", "input", "voice", "response_format", "instructions", "stream_format"})
_BLOCKED = frozenset({"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION"})


# ---------------------------------------------------------------- OpenAI's speech on Gemini


def speech_request(payload: Json) -> tuple[Json, list[str]]:
    """The `generateContent` body for an OpenAI speech call, and what it could not carry."""
    text = str(payload["input"])
    instructions = payload.get("instructions")
    if isinstance(instructions, str) and instructions.strip():
        text = f"{instructions.strip().rstrip('.:')}: {text}"
    config: Json = {"responseModalities": ["AUDIO"]}
    dropped = [n for n, v in payload.items() if v not in (None, "", False) and n not in _OPENAI_READ]
    voice = payload.get("voice")
    name = GEMINI_VOICES.get(voice.lower()) if isinstance(voice, str) else None
    if name is not None:
        config["speechConfig"] = {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": name}}}
    elif voice:
        dropped.append("voice")  # OpenAI's or a custom voice: Gemini's default speaks
    if speech_format(payload) != payload.get("response_format", "mp3"):
        dropped.append("response_format")
    body = {"contents": [{"role": "user", "parts": [{"text": text}]}], "generationConfig": config}
    return body, sorted(dropped)


def speech_format(payload: Json) -> str:
    """What the answer is: `pcm` as asked, else `wav` (the samples with a header)."""
    return "pcm" if payload.get("response_format") == "pcm" else "wav"


def spoken(answer: Any) -> tuple[bytes, int, int, int]:
    """A Gemini TTS answer's samples, their rate, and the prompt's and the audio's tokens. A
    prompt Gemini's safety rules stopped is the client's 400; no audio otherwise, empty samples.
    ValueError when the audio is not base64."""
    body = as_object(answer)
    usage = as_object(body.get("usageMetadata"))
    prompt, output = _count(usage.get("promptTokenCount")), _count(usage.get("candidatesTokenCount"))
    reasons = [as_object(body.get("promptFeedback")).get("blockReason")]
    pcm, rate = b"", PCM_RATE
    for candidate in map(as_object, as_list(body.get("candidates"))):
        reasons.append(candidate.get("finishReason"))
        for part in map(as_object, as_list(as_object(candidate.get("content")).get("parts"))):
            inline = as_object(read(part, "inlineData"))
            mime = str(read(inline, "mimeType") or "")
            if mime.startswith("audio/") and isinstance(inline.get("data"), str):
                pcm += blob_bytes(inline["data"])
                rate = _rate(mime)
    if not pcm and any(reason in _BLOCKED for reason in reasons):
        why = next(reason for reason in reasons if reason in _BLOCKED)
        raise UpstreamRejected(400, f"The upstream's safety system refused to speak this text ({why}).")
    return pcm, rate, prompt, output


def wav(pcm: bytes, rate: int) -> bytes:
    """16-bit mono samples as a WAV file."""
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + len(pcm), b"WAVE", b"fmt ", 16, 1, 1, rate, rate * 2, 2, 16,
        b"data", len(pcm),
    )  # fmt: skip
    return header + pcm


def _rate(mime: str) -> int:
    for param in mime.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key == "rate" and value.isdigit():
            return int(value)
    return PCM_RATE


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


# ------------------------------------------------------------ Gemini's speech on OpenAI


def speech_ask(request: Json) -> tuple[Json, str, list[str]]:
    """The OpenAI speech call (without its model) for a Gemini call asking for AUDIO output, the
    MIME type to answer in, and what the call could not carry."""
    prompt = read_prompt(
        request, "the speech", ("speechConfig", "speech_config", "responseFormat", "response_format")
    )
    speech = as_object(read(prompt.config, "speechConfig"))
    voice_config = as_object(read(speech, "voiceConfig"))
    name = read(as_object(read(voice_config, "prebuiltVoiceConfig")), "voiceName")
    voice = name.lower() if isinstance(name, str) and name.lower() in OPENAI_VOICES else None
    dropped = prompt.dropped
    if any(read(p, "speechMetadata") is not None for p in prompt.turns[prompt.last]):
        dropped.append("contents.parts.speechMetadata")  # Gemini's delivery directions
    if voice is None and voice_config:
        dropped.append("generationConfig.speechConfig.voiceConfig")  # Gemini's voice: OpenAI's default speaks
    other = (n for n in speech if n not in ("voiceConfig", "voice_config"))
    dropped += sorted(f"generationConfig.speechConfig.{n}" for n in other)
    # Gemini's newer TTS models take an audio format: raw samples and WAV are kept.
    asked = read(as_object(read(as_object(read(prompt.config, "responseFormat")), "audio")), "mimeType")
    mime = WAV_MIME if asked == "AUDIO_WAV" else PCM_MIME
    if asked not in (None, "AUDIO_WAV", "AUDIO_L16"):
        dropped.append("generationConfig.responseFormat")
    payload = {"input": prompt.text, "voice": voice or DEFAULT_OPENAI_VOICE, "response_format": "pcm"}
    return payload, mime, dropped


def gemini_audio_answer(pcm: bytes, mime: str, model: str) -> Json:
    """Gemini's answer holding these samples, raw (`PCM_MIME`) or as a WAV file (`WAV_MIME`)."""
    audio = wav(pcm, PCM_RATE) if mime == WAV_MIME else pcm
    part = {"inlineData": {"mimeType": mime, "data": base64.b64encode(audio).decode()}}
    candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "modelVersion": model}
