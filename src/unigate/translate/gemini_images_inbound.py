"""A Gemini client's image call (`generateContent` asking for IMAGE output) on a route that draws
through OpenAI's image API: the OpenAI image call it becomes (a generation, or an edit when the
call brings images), and OpenAI's images shown as Gemini's answer.

The prompt is the text of the last user turn; the images to edit are that turn's `inlineData`
images or, when it has none, the latest image of the conversation (the picture a chat is
refining). `imageConfig.aspectRatio` becomes the nearest of gpt-image's sizes and
`candidateCount` becomes `n`. What has no place in an image call (earlier turns' text, the
system instruction, tools, sampling) is named in `x-unigate-dropped-fields`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from unigate.errors import InvalidRequest
from unigate.translate.gemini_fields import as_list, as_object, blob_bytes
from unigate.translate.gemini_fields import field as read
from unigate.translate.gemini_prompt import read_prompt

Json = dict[str, Any]

# gpt-image's sizes by the aspect ratio each draws; another ratio gets the nearest, and is named.
OPENAI_SIZES = {1.0: "1024x1024", 1.5: "1536x1024", 2 / 3: "1024x1536"}
_CONFIG_READ = ("imageConfig", "image_config", "candidateCount", "candidate_count")
_RATIO = "generationConfig.imageConfig.aspectRatio"


@dataclass(slots=True)
class ImageAsk:
    """The OpenAI image call a Gemini image call becomes."""

    payload: Json  # prompt, and n and size when asked
    images: list[bytes] = field(default_factory=list)  # an edit's pictures
    dropped: list[str] = field(default_factory=list)


def image_ask(request: Json) -> ImageAsk:
    """The OpenAI image call for a Gemini `generateContent` request asking for IMAGE output."""
    prompt = read_prompt(request, "the image", _CONFIG_READ)
    ask = ImageAsk({"prompt": prompt.text}, _images(prompt.turns[prompt.last], prompt.last), prompt.dropped)
    for i in reversed(range(prompt.last)):  # none sent: a chat refining its latest picture
        if ask.images:
            break
        ask.images = _images(prompt.turns[i], i)[-1:]
    _read_config(prompt.config, ask)
    return ask


def _images(parts: list[Json], turn: int) -> list[bytes]:
    out = []
    for j, part in enumerate(parts):
        inline = as_object(read(part, "inlineData"))
        mime = read(inline, "mimeType")
        if isinstance(inline.get("data"), str) and isinstance(mime, str) and mime.startswith("image/"):
            try:
                out.append(blob_bytes(inline["data"]))
            except ValueError:
                where = f"contents[{turn}].parts[{j}].inlineData.data"
                raise InvalidRequest("Invalid value: the inline image is not base64.", param=where) from None
    return out


def _read_config(config: Json, ask: ImageAsk) -> None:
    count = read(config, "candidateCount")
    if count is not None:
        if type(count) is not int or not 1 <= count <= 10:
            raise InvalidRequest(
                "Invalid value for 'generationConfig.candidateCount': expected 1 to 10 for an image model.",
                param="generationConfig.candidateCount",
            )
        ask.payload["n"] = count
    image = as_object(read(config, "imageConfig"))
    other = (n for n in image if n not in ("aspectRatio", "aspect_ratio"))
    ask.dropped += sorted(f"generationConfig.imageConfig.{n}" for n in other)
    ratio = read(image, "aspectRatio")
    if ratio is None:
        return
    value = _ratio(ratio)
    nearest = min(OPENAI_SIZES, key=lambda r: abs(r / value - 1.0))
    ask.payload["size"] = OPENAI_SIZES[nearest]
    if abs(nearest - value) > 1e-9:
        ask.dropped.append(_RATIO)  # drawn at the nearest size


def _ratio(ratio: Any) -> float:
    width, _, height = str(ratio).partition(":")
    try:
        value = float(width) / float(height)
    except (ValueError, ZeroDivisionError):
        value = 0.0
    if not value > 0:
        raise InvalidRequest(
            f"Invalid value for '{_RATIO}': '{ratio}'; expected W:H, e.g. 16:9.", param=_RATIO
        )
    return value


@dataclass(frozen=True, slots=True)
class Drawing:
    """One image of OpenAI's answer: its base64 text, or the link to fetch it from."""

    mime_type: str
    b64: str = ""
    url: str = ""


def openai_images(answer: Any) -> tuple[list[Drawing], Json]:
    """OpenAI's `ImagesResponse`: its images, and its usage."""
    body = as_object(answer)
    mime = f"image/{body.get('output_format') or 'png'}"
    items = []
    for item in map(as_object, as_list(body.get("data"))):
        if isinstance(item.get("b64_json"), str):
            items.append(Drawing(mime, b64=item["b64_json"]))
        elif isinstance(item.get("url"), str):
            items.append(Drawing(mime, url=item["url"]))
    return items, as_object(body.get("usage"))


def gemini_answer(images: list[Drawing], usage: Json, model: str) -> Json:
    """Gemini's answer holding `images` (each with its base64 text): one candidate per image,
    as `candidateCount` asks."""
    candidates = [
        {
            "content": {
                "role": "model",
                "parts": [{"inlineData": {"mimeType": image.mime_type, "data": image.b64}}],
            },
            "finishReason": "STOP",
            "index": i,
        }
        for i, image in enumerate(images)
    ]
    prompt, output = _tokens(usage.get("input_tokens")), _tokens(usage.get("output_tokens"))
    metadata = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output,
    }
    return {"candidates": candidates, "usageMetadata": metadata, "modelVersion": model}


def _tokens(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0
