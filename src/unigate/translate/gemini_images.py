"""OpenAI-format image calls on Gemini's image models, which draw through `generateContent`
(`responseModalities: ["IMAGE"]`): the request an images generation or edit becomes, and the
images its answer carries.

Gemini takes a prompt, input images as `inlineData` parts and an aspect ratio; everything else
an OpenAI image call may set is named in `x-unigate-dropped-fields` rather than refused.
`size` becomes the nearest aspect ratio Gemini offers (the model picks the pixels), and one
call draws one image, so `n` images are `n` calls (made side by side by the adapter).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from unigate.errors import InvalidRequest, UpstreamRejected
from unigate.translate.gemini_fields import standard_b64

Json = dict[str, Any]

# The ratios Gemini's `imageConfig.aspectRatio` takes, by value.
ASPECT_RATIOS: dict[str, float] = {
    "1:1": 1.0,
    "2:3": 2 / 3,
    "3:2": 3 / 2,
    "3:4": 3 / 4,
    "4:3": 4 / 3,
    "9:16": 9 / 16,
    "16:9": 16 / 9,
    "21:9": 21 / 9,
}
# What of an image call Gemini takes (the prompt as text, an edit's images as parts) or the
# gateway honours itself; any other field set is named, never sent (`quality`, `mask`, ...).
HONOURED = frozenset(
    {"model", "prompt", "n", "size", "response_format", "stream", "image", "image[]", "images"}
)
# Why Gemini drew nothing, when it says so: the prompt or the picture met its safety rules.
_BLOCKED = frozenset(
    {
        "SAFETY",
        "PROHIBITED_CONTENT",
        "BLOCKLIST",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "RECITATION",
    }
)


def aspect_ratio(size: str | None) -> str | None:
    """The Gemini aspect ratio nearest to an OpenAI `size` (`1536x1024` → `3:2`); None for
    `auto` or no size (the model's default, square)."""
    if not size or size == "auto":
        return None
    width, _, height = size.partition("x")
    if not (width.isdigit() and height.isdigit()) or int(width) == 0 or int(height) == 0:
        expected = "expected WIDTHxHEIGHT (e.g. 1024x1024) or auto"
        raise InvalidRequest(f"Invalid value for 'size': '{size}'; {expected}.", param="size")
    wanted = int(width) / int(height)
    return min(ASPECT_RATIOS, key=lambda name: abs(ASPECT_RATIOS[name] / wanted - 1.0))


@dataclass(frozen=True, slots=True)
class InputImage:
    mime_type: str
    data: bytes


def image_request(payload: Json, images: list[InputImage]) -> Json:
    """The `generateContent` body that draws one image for an OpenAI generation (`images`
    empty) or edit (`images`: what to start from, before the prompt as Gemini's examples put them)."""
    parts: list[Json] = [
        {"inlineData": {"mimeType": image.mime_type, "data": base64.b64encode(image.data).decode()}}
        for image in images
    ]
    parts.append({"text": payload["prompt"]})
    config: Json = {"responseModalities": ["IMAGE"]}
    ratio = aspect_ratio(payload.get("size"))
    if ratio is not None:
        config["imageConfig"] = {"aspectRatio": ratio}
    return {"contents": [{"role": "user", "parts": parts}], "generationConfig": config}


def unhonoured(payload: Json, files: Iterable[str] = ()) -> list[str]:
    """The fields (and a form's `files`) of an image call set to what Gemini cannot honour."""
    named = {name for name, value in payload.items() if value not in (None, "", False)}
    return sorted(name for name in named.union(files) if name not in HONOURED)


@dataclass(slots=True)
class Drawn:
    """What one `generateContent` answer drew: its images, the text beside them, its tokens."""

    # (MIME type, base64): the text is passed on, not decoded (megabytes an image).
    images: list[tuple[str, str]] = field(default_factory=list)
    text: str = ""
    prompt_tokens: int = 0
    prompt_image_tokens: int = 0  # of `prompt_tokens`: an edit's input images
    output_tokens: int = 0


def drawn(answer: Any) -> Drawn:
    """The images of a `generateContent` answer. A prompt or picture Gemini's safety rules
    stopped is the client's 400 (`moderation_blocked`, as OpenAI's image models answer); an
    answer without an image for another reason comes back empty, for the adapter to fail over."""
    if not isinstance(answer, dict):
        return Drawn()
    out = Drawn()
    usage = answer.get("usageMetadata")
    if isinstance(usage, dict):
        out.prompt_tokens = _count(usage.get("promptTokenCount"))
        thoughts = _count(usage.get("thoughtsTokenCount"))  # Gemini 3's image models think first
        out.output_tokens = _count(usage.get("candidatesTokenCount")) + thoughts
        details = usage.get("promptTokensDetails")
        for detail in details if isinstance(details, list) else []:
            if isinstance(detail, dict) and detail.get("modality") == "IMAGE":
                out.prompt_image_tokens += _count(detail.get("tokenCount"))
    feedback = answer.get("promptFeedback")
    blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
    reasons = [blocked] if isinstance(blocked, str) else []
    texts: list[str] = []
    for candidate in answer.get("candidates") or []:
        if not isinstance(candidate, dict):
            continue
        reason = candidate.get("finishReason")
        if isinstance(reason, str):
            reasons.append(reason)
        content = candidate.get("content")
        for part in content.get("parts") or [] if isinstance(content, dict) else []:
            if not isinstance(part, dict) or part.get("thought"):
                continue
            inline = part.get("inlineData") or part.get("inline_data")
            if isinstance(inline, dict) and isinstance(inline.get("data"), str):
                mime = inline.get("mimeType") or inline.get("mime_type") or "image/png"
                if str(mime).startswith("image/"):
                    out.images.append((str(mime), standard_b64(inline["data"])))
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
    out.text = "".join(texts).strip()
    if not out.images and any(reason in _BLOCKED for reason in reasons):
        why = next(reason for reason in reasons if reason in _BLOCKED)
        raise UpstreamRejected(
            400,
            f"The upstream's safety system refused to draw this image ({why}).",
            code="moderation_blocked",
        )
    return out


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0
