"""Audio family, OpenAI format: `POST /v1/audio/transcriptions`, `/v1/audio/translations`
(multipart in, JSON or text out) and `/v1/audio/speech` (JSON in, binary audio streamed out).

Bodies are checked against their declarations (`shapes/audio.py`). Uploads are parsed as they
arrive (files spooled, 413 past `limits.max_audio_upload`) and sniffed, so anything that is not
audio is a 400 before a route is tried."""

from __future__ import annotations

from unigate.api.serving.relay import BINARY_FRAMING, OPENAI_FRAMING
from unigate.api.serving.serve import Serving
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.edge.media_types import sniff_audio
from unigate.edge.multipart import read_form
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall
from unigate.shapes.audio import SPEECH, TRANSCRIPTION, TRANSLATION, SpeechToText
from unigate.shapes.declare import Shape, form_payload


class AudioAPI:
    def __init__(self, gw: Gateway) -> None:
        self.serving = Serving(gw)
        self.max_upload = gw.config.limits.max_audio_upload
        self.max_json = gw.config.limits.max_json_body

    async def transcriptions(self, request: Request, principal: Principal) -> None:
        await self._speech_to_text(request, principal, "audio.transcriptions", TRANSCRIPTION)

    async def translations(self, request: Request, principal: Principal) -> None:
        await self._speech_to_text(request, principal, "audio.translations", TRANSLATION)

    async def _speech_to_text(
        self, request: Request, principal: Principal, op: str, shape: Shape[SpeechToText]
    ) -> None:
        form = await read_form(request, self.max_upload)
        try:
            payload = form_payload(form)
            checked = shape.check_form(form, payload)
            upload = checked.file.file
            if upload.size == 0:
                raise InvalidRequest("The file 'file' is empty.", param="file", code="invalid_file")
            if sniff_audio(upload.head()) is None:  # a file's content is no field's type
                raise InvalidRequest(
                    "The file is not audio in a supported format "
                    "(flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm).",
                    param="file",
                    code="invalid_file_format",
                )
            model = checked.model
            call = MediaCall(op, model, payload, form)
            await self.serving.media(request, principal, call)
        finally:
            form.close()

    async def speech(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.max_json)
        checked = SPEECH.check(payload)
        model, sse = checked.model, checked.stream_format == "sse"
        call = MediaCall("audio.speech", model, payload, raw=raw)
        framing = OPENAI_FRAMING if sse else BINARY_FRAMING
        await self.serving.media(request, principal, call, framing)


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = AudioAPI(gw)
    return [
        Endpoint("POST", "/v1/audio/transcriptions", api.transcriptions, family="audio"),
        Endpoint("POST", "/v1/audio/translations", api.translations, family="audio"),
        Endpoint("POST", "/v1/audio/speech", api.speech, family="audio"),
    ]
