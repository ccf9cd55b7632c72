"""`/v1/moderations` for the sandbox: a deterministic, offline classifier with OpenAI's thirteen
categories, scores and applied input types.

Text is scored from a small lexicon of phrases per category (`moderation_lexicon`), matched
whole-word and case-insensitively: a category's score is 1 - Π(1 - weight) over the phrases
found, so one strong phrase flags it (score ≥ 0.5) and weak ones only together. A sub-category
lifts its parent (`violence/graphic` → `violence`); sexual content naming a minor scores for
`sexual/minors`. Images (a data URL, or an http(s) URL fetched through the gateway's SSRF
guard) are decoded and scored on their pixels: mostly blood-red images score for `violence`
and `violence/graphic`, the categories OpenAI applies to images. Every score starts from a
tiny baseline derived from the input, so scores are stable, differ between inputs and are
never exactly zero, like a real classifier's.

An array of strings is one result per string; an array of `text`/`image_url` parts is one
result for all of them. `text-moderation-*` models classify text only and have no `illicit`
categories (null, as OpenAI's legacy models answer).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

import orjson

from unigate.edge.media_types import sniff_image
from unigate.errors import InvalidRequest
from unigate.openapi.moderations import CATEGORIES  # OpenAI's
from unigate.providers.base import Reply, TextCall, UrlFetcher
from unigate.usage.recorder import Usage
from unigate.webhooks.fetch import read_input
from unigate_sandbox.moderation_lexicon import LEXICON, MINORS, PARENT
from unigate_sandbox.tokens import count_tokens

# The categories OpenAI's omni models apply to images as well as text.
IMAGE_CATEGORIES = frozenset(
    {"self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "violence", "violence/graphic"}
)
LEGACY_ABSENT = frozenset({"illicit", "illicit/violent"})  # not classified by text-moderation-*
FLAG_AT = 0.5
MAX_IMAGES = 4  # per request: each is decoded
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # OpenAI's limit on an image input
MAX_IMAGE_PIXELS = 16_000_000  # checked from the header, before decoding
INLINE_CHARS = 64 * 1024  # more text than this is scored in a worker thread
_PATTERNS = {
    category: [(re.compile(r"\b" + re.escape(phrase) + r"\b", re.I), weight) for phrase, weight in phrases]
    for category, phrases in LEXICON.items()
}
_MINORS = re.compile(r"\b(" + "|".join(re.escape(w) for w in MINORS) + r")\b", re.I)


@dataclass(slots=True)
class _Input:
    texts: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)  # URLs as sent


def is_legacy(model: str) -> bool:
    return model.startswith("text-moderation")


def inputs_of(value: Any) -> list[_Input]:
    """The request's `input` (validated by the router) as the inputs that get a result each."""
    if isinstance(value, str):
        return [_Input([value])]
    if all(isinstance(v, str) for v in value):
        return [_Input([v]) for v in value]
    one = _Input()
    for part in value:
        if part["type"] == "text":
            one.texts.append(part["text"])
        else:
            one.images.append(part["image_url"]["url"])
    return [one]


async def moderation_reply(call: TextCall, model: str, fetch: UrlFetcher | None) -> Reply:
    inputs = inputs_of(call.payload["input"])
    urls = [url for one in inputs for url in one.images]
    if urls and is_legacy(model):
        raise InvalidRequest(
            f"The model '{model}' classifies text only; use omni-moderation-latest for images.",
            param="input",
            code="invalid_value",
        )
    if len(urls) > MAX_IMAGES:
        raise InvalidRequest(f"At most {MAX_IMAGES} images per request.", param="input", code="invalid_value")
    images: dict[str, bytes] = {}
    for i, url in enumerate(urls):
        images[url] = await read_input(fetch, url, MAX_IMAGE_BYTES, f"input[{i}].image_url.url")
        if sniff_image(images[url][:16]) is None:
            raise InvalidRequest(
                f"The image at 'input[{i}].image_url' is not a PNG, JPEG, WebP or GIF image.",
                param="input",
                code="invalid_image_format",
            )
    size = sum(len(t) for one in inputs for t in one.texts)
    if size > INLINE_CHARS or images:
        results = await asyncio.to_thread(_results, inputs, images, model)
    else:
        results = _results(inputs, images, model)
    body = {"id": "modr-" + secrets.token_hex(12), "model": model, "results": results}
    tokens = sum(count_tokens(t) for one in inputs for t in one.texts)
    return Reply(body=orjson.dumps(body), usage=Usage(prompt_tokens=tokens))


def _results(inputs: list[_Input], images: dict[str, bytes], model: str) -> list[dict[str, Any]]:
    return [_result(one, [images[url] for url in one.images], model) for one in inputs]


def _result(one: _Input, images: list[bytes], model: str) -> dict[str, Any]:
    text = "\n".join(one.texts)
    seed = hashlib.sha256(text.encode() + b"".join(hashlib.sha256(i).digest() for i in images)).digest()
    scores = {c: (seed[i] + 1) / 256 * 1e-4 for i, c in enumerate(CATEGORIES)}  # the baseline
    if text:
        for category, found in _text_scores(text).items():
            scores[category] = max(scores[category], found)
    for image in images:
        for category, found in _image_scores(image).items():
            scores[category] = max(scores[category], found)
    for child, parent in PARENT.items():
        scores[parent] = max(scores[parent], scores[child] * 0.9)
    legacy = is_legacy(model)
    kinds = (["text"] if text else []) + (["image"] if images else [])
    categories: dict[str, bool | None] = {}
    applied: dict[str, list[str]] = {}
    for c in CATEGORIES:
        if legacy and c in LEGACY_ABSENT:
            scores[c], categories[c], applied[c] = 0.0, None, []
            continue
        scores[c] = round(scores[c], 6)
        categories[c] = scores[c] >= FLAG_AT
        applied[c] = kinds if c in IMAGE_CATEGORIES else kinds[:1] if text else []
    return {
        "flagged": any(categories.values()),
        "categories": categories,
        "category_scores": scores,
        "category_applied_input_types": applied,
    }


def _text_scores(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for category, patterns in _PATTERNS.items():
        spared = 1.0
        for pattern, weight in patterns:
            if pattern.search(text):
                spared *= 1.0 - weight
        if spared < 1.0:
            out[category] = 1.0 - spared
    sexual = out.get("sexual", 0.0)
    if sexual and _MINORS.search(text):
        out["sexual/minors"] = max(out.get("sexual/minors", 0.0), min(0.99, sexual + 0.3))
    return out


def _image_scores(data: bytes) -> dict[str, float]:
    """Scores from the image's pixels: the share of blood-red ones, on a 64x64 thumbnail."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_IMAGE_PIXELS:
                raise InvalidRequest(
                    f"An image of more than {MAX_IMAGE_PIXELS} pixels.", param="input", code="invalid_value"
                )
            image.draft("RGB", (64, 64))
            pixels = list(image.convert("RGB").resize((64, 64)).getdata())
    except (UnidentifiedImageError, OSError, ValueError):
        raise InvalidRequest(
            "An image could not be decoded.", param="input", code="invalid_image_format"
        ) from None
    red = sum(1 for r, g, b in pixels if r > 140 and g < 70 and b < 70) / len(pixels)
    return {"violence": min(0.99, red * 0.9), "violence/graphic": min(0.99, red)} if red else {}
