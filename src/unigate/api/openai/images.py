"""Image family, OpenAI format: `POST /v1/images/generations` (JSON) and
`POST /v1/images/edits` (multipart `image` or `image[]`, optional `mask`; or JSON with
`images` and `mask` references, `image_refs.py`). Answers are `ImagesResponse` JSON with
`url` or `b64_json` items, relayed as the upstream sent them."""

from __future__ import annotations

import re

from unigate.api.openai.image_refs import json_edit_form
from unigate.api.serving import fields
from unigate.api.serving.public_url import configured_base, public_base
from unigate.api.serving.serve import Serving
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.edge.media_types import IMAGE_CONTENT_TYPES, sniff_image
from unigate.edge.multipart import is_json, read_form
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall

MAX_PROMPT = 32_000
MAX_IMAGES = 16
_SIZE = re.compile(r"^(auto|\d{2,5}x\d{2,5})$")


def check_common(payload: dict[str, object]) -> None:
    fields.required_text(payload, "prompt", MAX_PROMPT)
    fields.integer(payload, "n", 1, 10)
    size = fields.optional_text(payload, "size")
    if size is not None and not _SIZE.match(size):
        raise InvalidRequest(
            "Invalid value for 'size': expected WIDTHxHEIGHT (e.g. 1024x1024) or auto.",
            param="size",
            code="invalid_value",
        )
    fields.choice(payload, "response_format", ("url", "b64_json"))
    fields.choice(payload, "output_format", IMAGE_CONTENT_TYPES)
    fields.choice(payload, "background", ("transparent", "opaque", "auto"))
    fields.integer(payload, "output_compression", 0, 100)
    fields.optional_text(payload, "quality")
    fields.optional_text(payload, "style")


class ImagesAPI:
    def __init__(self, gw: Gateway) -> None:
        self.serving = Serving(gw)
        self.max_upload = gw.config.limits.max_image_upload
        self.max_json = gw.config.limits.max_json_body
        self.gw = gw
        self.public_url = configured_base(gw)

    @property
    def default_model(self) -> str:
        return self.gw.config.media.default_image_model  # read per call: a config reload may change it

    async def generations(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.max_json)
        check_common(payload)
        model = fields.optional_text(payload, "model") or self.default_model
        call = MediaCall(
            "images.generations", model, payload, raw=raw, public_base=public_base(request, self.public_url)
        )
        await self.serving.media(request, principal, call)

    async def edits(self, request: Request, principal: Principal) -> None:
        if is_json(request.header(b"content-type")):
            _, payload = await request.json_object(self.max_upload)  # the images may be data URLs
            check_common(payload)  # typed as JSON, before any image is read
            form = await json_edit_form(
                payload, self.gw.provider_context.fetch_url, self.max_upload, MAX_IMAGES
            )
        else:
            form = await read_form(request, self.max_upload)
        try:
            payload = fields.form_payload(form)
            images = form.files.get("image", [])
            if not images:
                raise InvalidRequest(
                    "Missing required file: 'image' (one file, or several as 'image[]').",
                    param="image",
                    code="missing_required_parameter",
                )
            if len(images) > MAX_IMAGES:
                raise InvalidRequest(f"At most {MAX_IMAGES} images.", param="image", code="invalid_value")
            fields.optional_file(form, "mask")  # a mask sent as text is refused, not ignored
            for upload in images + form.files.get("mask", []):
                if upload.size == 0 or sniff_image(upload.head()) not in ("png", "jpeg", "webp"):
                    raise InvalidRequest(
                        f"The file '{upload.filename}' is not a PNG, JPEG or WebP image.",
                        param=upload.name,
                        code="invalid_image_format",
                    )
            check_common(payload)
            model = fields.optional_text(payload, "model") or self.default_model
            call = MediaCall(
                "images.edits", model, payload, form, public_base=public_base(request, self.public_url)
            )
            await self.serving.media(request, principal, call)
        finally:
            form.close()


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = ImagesAPI(gw)
    return [
        Endpoint("POST", "/v1/images/generations", api.generations, family="image"),
        Endpoint("POST", "/v1/images/edits", api.edits, family="image"),
    ]
