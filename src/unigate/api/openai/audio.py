"""Audio family, OpenAI format: `POST /v1/audio/transcriptions`, `/v1/audio/translations`
(multipart in, JSON or text out) and `/v1/audio/speech` (JSON in, binary audio streamed out).

Uploads are parsed as they arrive (files spooled, 413 past `limits.max_audio_upload`) and
sniffed, so anything that is not audio is a 400 before a route is tried."""

from __future__ import annotations

from unigate.api.serving import fields
from unigate.api.serving.relay import BINARY_FRAMING, OPENAI_FRAMING
from unigate.api.serving.serve import Serving
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.edge.media_types import SPEECH_CONTENT_TYPES, sniff_audio
from unigate.edge.multipart import read_form
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall

TRANSCRIPT_FORMATS = frozenset({"json", "text", "srt", "verbose_json", "vtt", "diarized_json"})
TRANSLATION_FORMATS = frozenset({"json", "text", "srt", "verbose_json", "vtt"})
GRANULARITIES = frozenset({"word", "segment"})
MAX_SPEECH_INPUT = 4096


class AudioAPI:
    def __init__(self, gw: Gateway) -> None:
        self.serving = Serving(gw)
        self.max_upload = gw.config.limits.max_audio_upload
        self.max_json = gw.config.limits.max_json_body

    async def transcriptions(self, request: Request, principal: Principal) -> None:
        await self._speech_to_text(request, principal, "audio.transcriptions", TRANSCRIPT_FORMATS)

    async def translations(self, request: Request, principal: Principal) -> None:
        await self._speech_to_text(request, principal, "audio.translations", TRANSLATION_FORMATS)

    async def _speech_to_text(
        self, request: Request, principal: Principal, op: str, formats: frozenset[str]
    ) -> None:
        form = await read_form(request, self.max_upload)
        try:
            payload = fields.form_payload(form)
            upload = fields.one_file(form, "file", "the audio to transcribe")
            if sniff_audio(upload.head()) is None:
                raise InvalidRequest(
                    "The file is not audio in a supported format "
                    "(flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm).",
                    param="file",
                    code="invalid_file_format",
                )
            model = fields.required_text(payload, "model")
            response_format = fields.choice(payload, "response_format", formats, "json")
            fields.number(payload, "temperature", 0.0, 1.0)
            fields.optional_text(payload, "language")
            fields.optional_text(payload, "prompt")
            granularities = payload.get("timestamp_granularities", [])
            for g in granularities if isinstance(granularities, list) else [granularities]:
                if g not in GRANULARITIES:
                    raise InvalidRequest(
                        "Invalid value for 'timestamp_granularities[]': expected word or segment.",
                        param="timestamp_granularities[]",
                        code="invalid_value",
                    )
            if granularities and response_format != "verbose_json":
                raise InvalidRequest(
                    "'timestamp_granularities[]' requires response_format 'verbose_json'.",
                    param="timestamp_granularities[]",
                    code="invalid_value",
                )
            call = MediaCall(op, model, payload, form)
            await self.serving.media(request, principal, call)
        finally:
            form.close()

    async def speech(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.max_json)
        model = fields.required_text(payload, "model")
        fields.required_text(payload, "input", MAX_SPEECH_INPUT)
        voice = payload.get("voice")
        if voice is None or voice == "":
            raise InvalidRequest(
                "Missing required parameter: 'voice'.", param="voice", code="missing_required_parameter"
            )
        if not isinstance(voice, str) and not (isinstance(voice, dict) and isinstance(voice.get("id"), str)):
            raise InvalidRequest(
                "Invalid value for 'voice': a voice name or {\"id\": ...}.",
                param="voice",
                code="invalid_value",
            )
        fields.choice(payload, "response_format", SPEECH_CONTENT_TYPES, "mp3")
        fields.number(payload, "speed", 0.25, 4.0)
        fields.optional_text(payload, "instructions")
        sse = fields.choice(payload, "stream_format", ("audio", "sse"), "audio") == "sse"
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
