"""Speech family, Fish Audio format: `POST /fish/v1/tts` (JSON in, binary audio streamed
out; the voice model in a `model` header) and `POST /fish/v1/asr` (multipart `audio` in, JSON
text with timestamped segments out). Errors use Fish's `{"status", "message"}` body."""

from __future__ import annotations

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
from unigate.shapes.declare import form_payload
from unigate.shapes.fish import ASR, TTS


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
        TTS.check(payload)
        header = request.header(b"model")
        model = header.decode("latin-1").strip() if header else self.media.fish_tts_model
        call = MediaCall("fish.tts", model, payload, raw=raw)
        await self.serving.media(request, principal, call, BINARY_FRAMING)

    async def asr(self, request: Request, principal: Principal) -> None:
        form = await read_form(request, self.max_upload)
        try:
            payload = form_payload(form)
            upload = ASR.check_form(form, payload).audio.file
            if upload.size == 0 or sniff_audio(upload.head()) is None:  # its content is no field's type
                raise InvalidRequest("The file is not audio in a supported format.", param="audio")
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
