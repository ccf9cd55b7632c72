"""Speech family, Fish Audio format: `POST /fish/v1/tts` (JSON in, binary audio streamed
out; the voice model in a `model` header) and `POST /fish/v1/asr` (multipart `audio` in, JSON
text with timestamped segments out). Errors use Fish's `{"status", "message"}` body."""

from __future__ import annotations

from unigate.api.serving import fields
from unigate.api.serving.relay import BINARY_FRAMING
from unigate.api.serving.serve import Serving
from unigate.auth.principal import Principal
from unigate.config import MediaConfig
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.edge.media_types import sniff_audio
from unigate.edge.multipart import is_multipart, read_form
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall

TTS_FORMATS = ("mp3", "wav", "pcm", "opus")
MAX_TEXT = 15_000


class FishAPI:
    def __init__(self, gw: Gateway) -> None:
        self.serving = Serving(gw)
        self.max_upload = gw.config.limits.max_audio_upload
        self.max_json = gw.config.limits.max_json_body
        self.gw = gw

    @property
    def media(self) -> MediaConfig:
        return self.gw.config.media  # read per call: a config reload may change it

    async def tts(self, request: Request, principal: Principal) -> None:
        if is_multipart(request.header(b"content-type")):
            raise InvalidRequest("This endpoint takes a JSON body.", code="invalid_content_type")
        raw, payload = await request.json_object(self.max_json)
        fields.required_text(payload, "text", MAX_TEXT)
        fmt = fields.choice(payload, "format", TTS_FORMATS, "mp3")
        rate = fields.integer(payload, "sample_rate", 8000, 48000)
        if fmt == "opus" and rate not in (None, 48000):
            raise InvalidRequest("opus is 48000 Hz only.", param="sample_rate", code="invalid_value")
        fields.choice(payload, "latency", ("normal", "balanced", "low"))
        fields.integer(payload, "mp3_bitrate", 64, 192)
        fields.boolean(payload, "normalize")
        fields.optional_text(payload, "reference_id")
        header = request.header(b"model")
        model = header.decode("latin-1").strip() if header else self.media.fish_tts_model
        call = MediaCall("fish.tts", model, payload, raw=raw)
        await self.serving.media(request, principal, call, BINARY_FRAMING)

    async def asr(self, request: Request, principal: Principal) -> None:
        form = await read_form(request, self.max_upload)
        try:
            payload = fields.form_payload(form)
            upload = fields.one_file(form, "audio", "the audio to transcribe")
            if sniff_audio(upload.head()) is None:
                raise InvalidRequest("The file is not audio in a supported format.", param="audio")
            fields.optional_text(payload, "language")
            fields.boolean(payload, "ignore_timestamps")
            header = request.header(b"model")
            model = header.decode("latin-1").strip() if header else self.media.fish_asr_model
            call = MediaCall("fish.asr", model, payload, form)
            await self.serving.media(request, principal, call)
        finally:
            form.close()


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = FishAPI(gw)
    return [
        Endpoint("POST", "/fish/v1/tts", api.tts, family="audio", style="fish"),
        Endpoint("POST", "/fish/v1/asr", api.asr, family="audio", style="fish"),
    ]
