"""OpenAI-format speech (`/v1/audio/speech`) on a Gemini TTS model (the rules:
`translate/gemini_speech.py`): one `generateContent` call asking for AUDIO, answered as the
audio bytes (`pcm`, or `wav` for any other format asked) or, for `stream_format: "sse"`, as
OpenAI's speech events (one `speech.audio.delta` with the whole audio, then `speech.audio.done`)."""

from __future__ import annotations

import base64

import orjson

from unigate.providers.base import MediaCall, Reply, RouteFailed, Target
from unigate.providers.google.wire import PostJson, model_path
from unigate.translate.gemini_speech import speech_format, speech_request, spoken, wav
from unigate.translate.sse import json_event
from unigate.translate.translation import with_dropped
from unigate.usage.recorder import Usage

SPEECH_OP = "audio.speech"


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
