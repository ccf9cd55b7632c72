"""Audio output asked of a Gemini-format call whose route speaks through OpenAI's speech API (an
`openai` provider's `tts-1` or `gpt-4o-mini-tts`, or the sandbox): the call becomes a
`/v1/audio/speech` call for `pcm`, whose samples are Gemini's own audio format, and they come
back as Gemini's answer, whole or as a stream's one event (the rules:
`translate/gemini_speech.py`). A route that speaks Gemini gets the client's request instead (the
sandbox takes Gemini's image calls as they are, not its speech calls)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import orjson

from unigate.api.gemini.draw import Route
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall, Reply, RouteFailed, StreamBroken, Target
from unigate.translate.gemini_speech import gemini_audio_answer, speech_ask
from unigate.translate.sse import json_event
from unigate.translate.translation import with_dropped

SPEECH = "audio.speech"


def speaks(target: Target) -> bool:
    """The route answers audio output through OpenAI's speech API."""
    provider = target.provider
    return "gemini" not in provider.native_formats and SPEECH in provider.capabilities


class GeminiSpeak:
    def __init__(self, gw: Gateway) -> None:
        self.max_audio = gw.config.limits.max_audio_upload  # what an answer may hold

    def routes(self, payload: dict[str, Any], model: str, stream: bool, other: Route) -> Route:
        """The call's route attempt: routes that `speak` speak, the rest go to `other`."""

        def attempt(target: Target) -> Awaitable[Reply]:
            return self._speak(payload, model, stream, target) if speaks(target) else other(target)

        return attempt

    async def _speak(self, request: dict[str, Any], model: str, stream: bool, target: Target) -> Reply:
        fields, mime, dropped = speech_ask(request)
        payload = {"model": model, **fields}
        call = MediaCall(SPEECH, model, payload, raw=orjson.dumps(payload))
        reply = await target.provider.media(call, target)
        pcm = reply.body if reply.stream is None else await self._read(reply)
        if not pcm:
            raise RouteFailed("The upstream answered without audio.")
        answer = gemini_audio_answer(pcm, mime, model)
        return Reply(
            content_type=b"text/event-stream" if stream else b"application/json",
            body=json_event(answer) if stream else orjson.dumps(answer),
            usage=reply.usage,
            headers=with_dropped([], dropped),
            wire="gemini",
        )

    async def _read(self, reply: Reply) -> bytes:
        """A streamed answer, whole (Gemini answers its audio in one part)."""
        assert reply.stream is not None
        chunks, size = [], 0
        try:
            async for chunk in reply.stream:
                size += len(chunk)
                if size > self.max_audio:
                    if reply.close is not None:
                        reply.close()
                    raise RouteFailed("The upstream's audio is longer than limits.max_audio_upload.")
                chunks.append(chunk)
        except StreamBroken:
            raise RouteFailed("The upstream's audio broke off.") from None
        return b"".join(chunks)
