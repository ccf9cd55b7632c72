"""OpenAI-format speech on Gemini models. Text to speech (`/v1/audio/speech`) on a TTS model (the
rules: `translate/gemini_speech.py`): one `generateContent` call asking for AUDIO, answered as the
audio bytes (`pcm`, or `wav` for any other format asked) or, for `stream_format: "sse"`, as
OpenAI's speech events (one `speech.audio.delta` with the whole audio, then `speech.audio.done`).
Speech to text (`/v1/audio/transcriptions`, `/translations`; `translate/gemini_transcripts.py`):
the audio and an instruction in one call, its text answered as `json` or `text`."""

from __future__ import annotations

import base64

import orjson

from unigate.edge.media_types import sniff_audio
from unigate.errors import InvalidRequest
from unigate.providers.base import MediaCall, Reply, RouteFailed, Target, Unsupported
from unigate.providers.google.wire import PostJson, model_path
from unigate.translate.gemini_speech import speech_format, speech_request, spoken, wav
from unigate.translate.gemini_transcripts import openai_transcript, transcript_request, written
from unigate.translate.sse import json_event
from unigate.translate.translation import with_dropped
from unigate.usage.recorder import Usage

SPEECH_OP = "audio.speech"
TRANSCRIPT_OPS = frozenset({"audio.transcriptions", "audio.translations"})


class GeminiSpeech:
    def __init__(self, post_json: PostJson) -> None:
        self._post_json = post_json

    async def speak(self, call: MediaCall, target: Target) -> Reply:
        body, dropped = speech_request(call.payload)
        data = await self._post_json(model_path(target, "generateContent"), orjson.dumps(body), target)
        try:
            pcm, rate, prompt, output = spoken(orjson.loads(data))
        except orjson.JSONDecodeError:
            raise RouteFailed("The upstream's answer is not JSON.") from None
        except ValueError:  # the audio's data is not base64
            raise RouteFailed("The upstream's audio is not base64.") from None
        if not pcm:  # not refused, yet nothing spoken: another route may speak it
            raise RouteFailed("The upstream answered without audio.")
        fmt = speech_format(call.payload)
        audio = pcm if fmt == "pcm" else wav(pcm, rate)
        usage, headers = Usage(prompt, output), with_dropped([], dropped)
        if call.payload.get("stream_format") == "sse":
            tokens = {"input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output}
            delta = {"type": "speech.audio.delta", "audio": base64.b64encode(audio).decode()}
            events = json_event(delta) + json_event({"type": "speech.audio.done", "usage": tokens})
            return Reply(content_type=b"text/event-stream", body=events, usage=usage, headers=headers)
        return Reply(content_type=f"audio/{fmt}".encode(), body=audio, usage=usage, headers=headers)

    async def transcribe(self, call: MediaCall, target: Target) -> Reply:
        upload = call.form.file("file") if call.form is not None else None
        assert upload is not None  # checked at the edge
        container = sniff_audio(upload.head()) or ""
        translate = call.op == "audio.translations"
        try:
            body, dropped = transcript_request(call.payload, upload.read(), container, translate)
        except InvalidRequest as refused:  # a format or a container another route may take
            raise Unsupported(refused.message, param=refused.param) from None
        data = await self._post_json(model_path(target, "generateContent"), orjson.dumps(body), target)
        try:
            text, prompt, output = written(orjson.loads(data))
        except orjson.JSONDecodeError:
            raise RouteFailed("The upstream's answer is not JSON.") from None
        usage, headers = Usage(prompt, output), with_dropped([], dropped)
        if (call.payload.get("response_format") or "json") == "text":
            return Reply(
                content_type=b"text/plain; charset=utf-8", body=text.encode(), usage=usage, headers=headers
            )
        answer = openai_transcript(text, prompt, output)
        return Reply(body=orjson.dumps(answer), usage=usage, headers=headers)
