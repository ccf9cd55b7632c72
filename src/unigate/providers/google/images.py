"""OpenAI-format image generations and edits on a Gemini image model (the rules:
`translate/gemini_images.py`): one `generateContent` call per image asked for, side by side,
answered as OpenAI's `ImagesResponse` (`b64_json` items; `url` items link to copies the gateway
stores and serves under `/media/`, as the sandbox's do), or, for `stream: true`, as one
`image_generation.completed` event per image."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Coroutine
from typing import Any

import orjson

from unigate.edge.media_types import IMAGE_CONTENT_TYPES, sniff_image
from unigate.providers.base import MediaCall, Reply, RouteFailed, Target
from unigate.providers.google.wire import PostJson, model_path
from unigate.storage import Storage, keep_image
from unigate.translate.gemini_images import Drawn, InputImage, drawn, image_request, unhonoured
from unigate.translate.sse import json_event
from unigate.translate.translation import with_dropped
from unigate.usage.recorder import Usage

IMAGE_OPS = frozenset({"images.generations", "images.edits"})
_FORMATS = {mime: fmt for fmt, mime in IMAGE_CONTENT_TYPES.items()}  # image/png → png


class GeminiImages:
    def __init__(self, post_json: PostJson, storage: Storage) -> None:
        self._post_json = post_json
        self._storage = storage

    async def draw(self, call: MediaCall, target: Target) -> Reply:
        payload = call.payload
        body = orjson.dumps(image_request(payload, _inputs(call)))
        path = model_path(target, "generateContent")
        # A form's fields are text (`n=2`, `stream=true`), checked at the edge.
        count = int(payload.get("n") or 1)
        answers = await _side_by_side([self._one(path, body, target) for _ in range(count)])
        # An answer may hold more than one image: the first `n` are what was asked for.
        images = [(image, answer) for answer in answers for image in answer.images][:count]
        usage = Usage(sum(a.prompt_tokens for a in answers), sum(a.output_tokens for a in answers))
        fmt = _format(images[0][0][0])
        dropped = unhonoured(payload, call.form.files if call.form is not None else ())
        if payload.get("output_format") not in (None, "", fmt):
            dropped.append("output_format")  # Gemini takes no output format
        headers = with_dropped([], dropped)
        if str(payload.get("stream")).lower() == "true":
            events = b"".join(_completed_event(image, _usage([answer])) for image, answer in images)
            return Reply(content_type=b"text/event-stream", body=events, usage=usage, headers=headers)
        items: list[dict[str, str]] = []
        for (mime, data), _ in images:
            if payload.get("response_format") == "url":
                items.append({"url": call.public_base + await self._store(data, _format(mime))})
            else:
                items.append({"b64_json": data})
        answer = {"created": int(time.time()), "data": items, "output_format": fmt, "usage": _usage(answers)}
        return Reply(body=orjson.dumps(answer), usage=usage, headers=headers)

    async def _one(self, path: str, body: bytes, target: Target) -> Drawn:
        data = await self._post_json(path, body, target)
        try:
            answer = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise RouteFailed("The upstream's answer is not JSON.") from None
        result = drawn(answer)
        if not result.images:  # not refused, yet nothing drawn: another route may draw it
            raise RouteFailed("The upstream answered without an image.")
        return result

    async def _store(self, image: str, fmt: str) -> str:
        """A copy the gateway serves under `/media/` of an image given as base64."""
        try:
            data = base64.b64decode(image, validate=True)
        except ValueError:
            raise RouteFailed("The upstream's image is not base64.") from None
        return await keep_image(self._storage, data, fmt)


async def _side_by_side(calls: list[Coroutine[Any, Any, Drawn]]) -> list[Drawn]:
    """Every call's answer, in order; the first failure is raised as itself (the router tells
    a refusal from a failed route by its type) and stops the others."""
    if len(calls) == 1:
        return [await calls[0]]
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        raise


def _format(mime: str) -> str:
    """OpenAI's `output_format` for an image's MIME type (`image/png` → `png`)."""
    return _FORMATS.get(mime, mime.removeprefix("image/"))


def _inputs(call: MediaCall) -> list[InputImage]:
    """An edit's images (`image` or `image[]`, checked at the edge as PNG, JPEG or WebP)."""
    if call.form is None:
        return []
    uploads = call.form.files.get("image", []) + call.form.files.get("image[]", [])
    return [InputImage(f"image/{sniff_image(u.head()) or 'png'}", u.read()) for u in uploads]


def _usage(answers: list[Drawn]) -> dict[str, Any]:
    """OpenAI's image usage from Gemini's counts (its prompt counts by modality)."""
    prompt = sum(a.prompt_tokens for a in answers)
    output = sum(a.output_tokens for a in answers)
    images = sum(a.prompt_image_tokens for a in answers)
    return {
        "input_tokens": prompt,
        "output_tokens": output,
        "total_tokens": prompt + output,
        "input_tokens_details": {"text_tokens": prompt - images, "image_tokens": images},
    }


def _completed_event(image: tuple[str, str], usage: dict[str, Any]) -> bytes:
    """OpenAI's last image-stream event: the whole image (Gemini sends no partial images)."""
    mime, data = image
    event = {
        "type": "image_generation.completed",
        "b64_json": data,
        "created_at": int(time.time()),
        "size": "auto",
        "quality": "auto",
        "background": "auto",
        "output_format": _format(mime),
        "usage": usage,
    }
    return json_event(event, "image_generation.completed")
