"""Image family, OpenAI format: `POST /v1/images/generations` (JSON) and
`POST /v1/images/edits` (multipart `image` or `image[]`, optional `mask`; or JSON with
`images` and `mask` references, `image_refs.py`). Answers are `ImagesResponse` JSON with
`url` or `b64_json` items, relayed as the upstream sent them."""

from __future__ import annotations

from unigate.api.openai.image_refs import json_edit_form
from unigate.api.serving.public_url import configured_base, public_base
from unigate.api.serving.serve import Serving
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.edge.media_types import sniff_image
from unigate.edge.multipart import is_json, read_form
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall
from unigate.shapes.declare import form_payload
from unigate.shapes.images import EDIT_FORM, EDIT_JSON, GENERATION


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
        model = GENERATION.check(payload).model or self.default_model
        call = MediaCall(
            "images.generations", model, payload, raw=raw, public_base=public_base(request, self.public_url)
        )
        await self.serving.media(request, principal, call)

    async def edits(self, request: Request, principal: Principal) -> None:
        if is_json(request.header(b"content-type")):
            _, payload = await request.json_object(self.max_upload)  # the images may be data URLs
            checked = EDIT_JSON.check(payload)  # typed as JSON, before any image is read
            form = await json_edit_form(payload, checked, self.gw.provider_context.fetch_url, self.max_upload)
        else:
            form = await read_form(request, self.max_upload)
        try:
            payload = form_payload(form)
            edit = EDIT_FORM.check_form(form, payload)
            # A file's content is no field's type: sniffed here.
            for upload in [part.file for part in edit.image] + ([edit.mask.file] if edit.mask else []):
                if upload.size == 0 or sniff_image(upload.head()) not in ("png", "jpeg", "webp"):
                    raise InvalidRequest(
                        f"The file '{upload.filename}' is not a PNG, JPEG or WebP image.",
                        param=upload.name,
                        code="invalid_image_format",
                    )
            model = edit.model or self.default_model
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
