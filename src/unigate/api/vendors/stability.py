"""Image family, Stability format: `POST /stability/v2beta/stable-image/generate/{ultra,core,sd3}`.
Multipart in (plain fields even without a file); `Accept: image/*` gets the image bytes with
`finish-reason` and `seed` headers, `Accept: application/json` gets
`{"image": base64, "finish_reason", "seed"}`. Errors use Stability's `{"id","name","errors"}`."""

from __future__ import annotations

from unigate.api.serving.serve import Serving
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.edge.media_types import sniff_image
from unigate.edge.multipart import read_form
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall
from unigate.shapes.declare import form_payload
from unigate.shapes.refusal import OPENAI
from unigate.shapes.stability import GENERATE, SD3_MODELS, STYLE_PRESETS

MODELS = {"ultra": "stable-image-ultra", "core": "stable-image-core"}


def _refused(param: str, expected: str) -> InvalidRequest:
    return OPENAI.refuse("value", param, expected)


class StabilityAPI:
    def __init__(self, gw: Gateway) -> None:
        self.serving = Serving(gw)
        self.max_upload = gw.config.limits.max_image_upload
        self.gw = gw

    @property
    def sd3_default(self) -> str:
        return self.gw.config.media.sd3_model  # read per call: a config reload may change it

    async def generate(self, request: Request, principal: Principal) -> None:
        variant = request.params["variant"]
        if variant not in ("ultra", "core", "sd3"):
            raise NotFound(f"No stable-image generator '{variant}'.", code="not_found")
        accept = (request.header(b"accept") or b"image/*").decode("latin-1").lower()
        if "application/json" not in accept and "image/" not in accept and "*/*" not in accept:
            raise InvalidRequest("Accept must be image/* or application/json.", code="invalid_accept")
        form = await read_form(request, self.max_upload)
        try:
            payload = form_payload(form)
            sent = GENERATE.check_form(form, payload)
            # What depends on the path's generator (shapes/stability.py says why it is here).
            if variant == "sd3" and sent.output_format == "webp":
                raise _refused("output_format", "png or jpeg (sd3)")
            if variant == "core" and sent.style_preset and sent.style_preset not in STYLE_PRESETS:
                raise _refused("style_preset", "one of " + ", ".join(STYLE_PRESETS))
            if sent.image is not None:
                if variant == "core":
                    raise InvalidRequest("core does not take an image.", code="invalid_field")
                if sniff_image(sent.image.file.head()) not in ("png", "jpeg", "webp"):
                    raise InvalidRequest("image: not a PNG, JPEG or WebP image.", code="invalid_image")
            if variant == "sd3" and sent.model and sent.model not in SD3_MODELS:
                raise _refused("model", "one of " + ", ".join(SD3_MODELS))
            model = MODELS.get(variant) or sent.model or self.sd3_default
            call = MediaCall("stability.generate", model, payload, form, variant=variant, accept=accept)
            await self.serving.media(request, principal, call)
        finally:
            form.close()


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = StabilityAPI(gw)
    path = "/stability/v2beta/stable-image/generate/{variant}"
    return [Endpoint("POST", path, api.generate, family="image", style="stability")]
