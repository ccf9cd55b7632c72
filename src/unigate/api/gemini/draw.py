"""Image output asked of a Gemini-format call whose route draws through OpenAI's image API (an
`openai` provider's gpt-image or DALL·E model): the call becomes an images generation, or an
edit when it brings pictures (the rules: `translate/gemini_images_inbound.py`), and the images
come back as Gemini's answer, whole or as a stream's one event. A route that speaks Gemini, or
makes its image output itself (the sandbox), gets the client's request instead; any other
route, the translated chat call."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from unigate.api.openai.image_refs import add_field, add_file
from unigate.edge.multipart import Form
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall, Reply, RouteFailed, Target
from unigate.translate.gemini_images_inbound import Drawing, ImageAsk, gemini_answer, image_ask, openai_images
from unigate.translate.sse import json_event
from unigate.translate.translation import with_dropped
from unigate.usage.recorder import Usage

Route = Callable[[Target], Awaitable[Reply]]
# Formats whose routes take the client's request as it is (`DialectCall`).
NATIVE = frozenset({"gemini", "gemini-image"})


def draws(target: Target) -> bool:
    """The route answers image output through OpenAI's image API."""
    provider = target.provider
    return not (provider.native_formats & NATIVE) and "images.generations" in provider.capabilities


class GeminiDraw:
    def __init__(self, gw: Gateway) -> None:
        self.fetch = gw.provider_context.fetch_url
        self.max_image = gw.config.limits.max_image_upload

    def routes(self, payload: dict[str, Any], model: str, stream: bool, other: Route) -> Route:
        """The call's route attempt: routes that `draw` draw, the rest go to `other`. The image
        call is built once, on the first route that needs it."""
        asked: list[ImageAsk] = []

        def attempt(target: Target) -> Awaitable[Reply]:
            if not draws(target):
                return other(target)
            if not asked:
                asked.append(image_ask(payload))
            return self._draw(asked[0], model, stream, target)

        return attempt

    async def _draw(self, ask: ImageAsk, model: str, stream: bool, target: Target) -> Reply:
        payload = {"model": model, **ask.payload}
        form = _edit_form(payload, ask.images) if ask.images else None
        op = "images.edits" if form is not None else "images.generations"
        call = MediaCall(op, model, payload, form, raw=orjson.dumps(payload))
        try:
            reply = await target.provider.media(call, target)
        finally:
            if form is not None:
                form.close()
        try:
            images, usage = openai_images(orjson.loads(reply.body))
        except orjson.JSONDecodeError:
            raise RouteFailed("The upstream's answer is not JSON.") from None
        if not images:
            raise RouteFailed("The upstream answered without an image.")
        images = [await self._fetched(image) for image in images]
        answer = gemini_answer(images, usage, model)
        tokens = answer["usageMetadata"]
        return Reply(
            content_type=b"text/event-stream" if stream else b"application/json",
            body=json_event(answer) if stream else orjson.dumps(answer),
            usage=Usage(tokens["promptTokenCount"], tokens["candidatesTokenCount"]),
            headers=with_dropped([], ask.dropped),
            wire="gemini",
        )

    async def _fetched(self, image: Drawing) -> Drawing:
        """The image with its base64 text: an answer's link (DALL·E's default) fetched."""
        if not image.url:
            return image
        if self.fetch is None:
            raise RouteFailed("The upstream answered with an image link, which this gateway cannot fetch.")
        try:
            data, _ = await self.fetch(image.url, self.max_image)
        except InvalidRequest:
            raise RouteFailed("The upstream's image link could not be fetched.") from None
        return Drawing(image.mime_type, b64=base64.b64encode(data).decode())


def _edit_form(payload: dict[str, Any], images: list[bytes]) -> Form:
    """The multipart edit these fields and pictures make (the caller closes it)."""
    form = Form()
    for name, value in payload.items():
        add_field(form, name, value)
    for i, data in enumerate(images):
        add_file(form, "image[]" if len(images) > 1 else "image", f"contents.image[{i}]", data)
    return form
