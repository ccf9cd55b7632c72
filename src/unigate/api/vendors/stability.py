"""Image family, Stability format: `POST /stability/v2beta/stable-image/generate/{ultra,core,sd3}`.
Multipart in (plain fields even without a file); `Accept: image/*` gets the image bytes with
`finish-reason` and `seed` headers, `Accept: application/json` gets
`{"image": base64, "finish_reason", "seed"}`. Errors use Stability's `{"id","name","errors"}`."""

from __future__ import annotations

from unigate.api.serving import fields
from unigate.api.serving.serve import Serving
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.edge.media_types import sniff_image
from unigate.edge.multipart import read_form
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall

ASPECT_RATIOS = ("16:9", "1:1", "21:9", "2:3", "3:2", "4:5", "5:4", "9:16", "9:21")
STYLE_PRESETS = (
    "3d-model", "analog-film", "anime", "cinematic", "comic-book", "digital-art", "enhance", "fantasy-art",
    "isometric", "line-art", "low-poly", "modeling-compound", "neon-punk", "origami", "photographic",
    "pixel-art", "tile-texture",
)  # fmt: skip
SD3_MODELS = ("sd3.5-large", "sd3.5-large-turbo", "sd3.5-medium", "sd3.5-flash")
MODELS = {"ultra": "stable-image-ultra", "core": "stable-image-core"}


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
            payload = fields.form_payload(form)
            fields.required_text(payload, "prompt", 10_000)
            fields.optional_text(payload, "negative_prompt")
            fields.choice(payload, "aspect_ratio", ASPECT_RATIOS)
            fields.integer(payload, "seed", 0, 4_294_967_294)
            formats = ("png", "jpeg") if variant == "sd3" else ("png", "jpeg", "webp")
            fields.choice(payload, "output_format", formats)
            if variant == "core":
                fields.choice(payload, "style_preset", STYLE_PRESETS)
            image = fields.optional_file(form, "image")
            if image is not None:
                if variant == "core":
                    raise InvalidRequest("core does not take an image.", code="invalid_field")
                if sniff_image(image.head()) not in ("png", "jpeg", "webp"):
                    raise InvalidRequest("image: not a PNG, JPEG or WebP image.", code="invalid_image")
                if fields.number(payload, "strength", 0.0, 1.0) is None:
                    raise InvalidRequest("strength is required with an image.", code="invalid_field")
            model = MODELS.get(variant) or (
                fields.choice(payload, "model", SD3_MODELS, self.sd3_default) or self.sd3_default
            )
            call = MediaCall("stability.generate", model, payload, form, variant=variant, accept=accept)
            await self.serving.media(request, principal, call)
        finally:
            form.close()


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = StabilityAPI(gw)
    path = "/stability/v2beta/stable-image/generate/{variant}"
    return [Endpoint("POST", path, api.generate, family="image", style="stability")]
