"""Turn each video family's request into the canonical video job (video/job.py), checking
it on the way: every violation is a 400 naming the field, in the family's own error shape
(the edge renders it). The client's own body is kept as `native`, so an upstream that
speaks the same format gets it unchanged."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from unigate.api.serving import fields as check
from unigate.edge.media_types import sniff_image
from unigate.edge.multipart import Form
from unigate.errors import InvalidRequest
from unigate.providers.base import InputFile

MAX_PROMPT = 32_000
MAX_SECONDS = 60
_SIZE = re.compile(r"^(\d{2,4})x(\d{2,4})$")
KLING_DEFAULT_MODEL = "kling-v1"
KLING_ASPECTS = ("16:9", "9:16", "1:1")
VEO_ASPECTS = ("16:9", "9:16")


@dataclass(slots=True)
class VideoRequest:
    model: str
    action: str  # text2video | image2video
    fields: dict[str, Any]
    files: dict[str, InputFile] = field(default_factory=dict)


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None and v != ""}


def _size(value: str | None, param: str = "size") -> tuple[int, int] | None:
    if value is None:
        return None
    match = _SIZE.match(value.strip())
    if not match or not (64 <= int(match[1]) <= 3840 and 64 <= int(match[2]) <= 3840):
        raise InvalidRequest(
            f"Invalid value for '{param}': expected WIDTHxHEIGHT such as 720x1280, each side 64 to 3840.",
            param=param,
            code="invalid_value",
        )
    return int(match[1]), int(match[2])


def _image_file(upload: InputFile, param: str) -> InputFile:
    kind = sniff_image(upload.data[:64])
    if kind not in ("png", "jpeg", "webp"):
        raise InvalidRequest(
            f"'{param}' must be a PNG, JPEG or WebP image.", param=param, code="invalid_image_format"
        )
    return InputFile(upload.data, upload.filename, f"image/{kind}")


def _image_ref(value: Any, param: str) -> str | None:
    """An image given by reference: an http(s) URL, a data: URL or raw base64."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 30 * 1024 * 1024:
        raise InvalidRequest(
            f"'{param}' must be an image URL or base64 string.", param=param, code="invalid_value"
        )
    return value.strip()


def from_openai(payload: dict[str, Any], form: Form | None, default_model: str) -> VideoRequest:
    """`POST /v1/videos`: JSON, or multipart (the SDK sends multipart even without a file)."""
    prompt = check.required_text(payload, "prompt", MAX_PROMPT)
    model = check.optional_text(payload, "model") or default_model
    seconds = check.integer(payload, "seconds", 1, MAX_SECONDS)
    size = _size(check.optional_text(payload, "size"))
    files: dict[str, InputFile] = {}
    image: str | None = None
    reference = payload.get("input_reference")
    if form is not None and (upload := check.optional_file(form, "input_reference")) is not None:
        if upload.size == 0:
            raise InvalidRequest("The file 'input_reference' is empty.", param="input_reference")
        files["image"] = _image_file(
            InputFile(upload.read(), upload.filename, upload.content_type), "input_reference"
        )
    elif isinstance(reference, dict):
        image = _image_ref(reference.get("image_url"), "input_reference.image_url")
    elif form is not None and form.field("input_reference[image_url]"):
        image = _image_ref(form.field("input_reference[image_url]"), "input_reference[image_url]")
    elif reference is not None and not isinstance(reference, dict):
        # A plain string (in JSON) would be neither uploaded nor followed: refused, not ignored.
        raise InvalidRequest(
            "'input_reference' must be a file or an object with image_url.", param="input_reference"
        )
    fields = _drop_none(
        {
            "prompt": prompt,
            "seconds": float(seconds) if seconds is not None else None,
            "width": size[0] if size else None,
            "height": size[1] if size else None,
            "size": f"{size[0]}x{size[1]}" if size else None,
            "image": image,
            "native_format": "openai",
            "native": {k: v for k, v in payload.items() if isinstance(v, str | int | float)},
        }
    )
    action = "image2video" if files or image else "text2video"
    return VideoRequest(model, action, fields, files)


def from_unified(payload: dict[str, Any]) -> VideoRequest:
    """`POST /v1/video/generations` (new-api's unified body)."""
    model = check.required_text(payload, "model", 200)
    image = _image_ref(payload.get("image"), "image")
    prompt = check.optional_text(payload, "prompt") or ""
    if not prompt.strip() and image is None:
        raise InvalidRequest(
            "Missing required parameter: 'prompt'.", param="prompt", code="missing_required_parameter"
        )
    if len(prompt) > MAX_PROMPT:
        raise InvalidRequest(
            f"'prompt' is longer than {MAX_PROMPT} characters.", param="prompt", code="invalid_value"
        )
    duration = check.number(payload, "duration", 0.5, MAX_SECONDS)
    width = check.integer(payload, "width", 64, 3840)
    height = check.integer(payload, "height", 64, 3840)
    if (width is None) != (height is None):
        raise InvalidRequest(
            "Give both 'width' and 'height', or neither.", param="width", code="invalid_value"
        )
    metadata = payload.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidRequest("'metadata' must be an object.", param="metadata", code="invalid_value")
    fields = _drop_none(
        {
            "prompt": prompt,
            "seconds": duration,
            "width": width,
            "height": height,
            "fps": check.integer(payload, "fps", 1, 60),
            "seed": check.integer(payload, "seed", 0, 2**32 - 1),
            "image": image,
            "negative_prompt": (metadata or {}).get("negative_prompt"),
            "aspect_ratio": (metadata or {}).get("aspect_ratio"),
            "metadata": metadata or None,
            "native_format": "unified",
            "native": payload,
        }
    )
    return VideoRequest(model, "image2video" if image else "text2video", fields)


def from_kling(payload: dict[str, Any], action: str) -> VideoRequest:
    """Kling's `text2video` / `image2video` bodies."""
    model = (
        check.optional_text(payload, "model_name")
        or check.optional_text(payload, "model")
        or KLING_DEFAULT_MODEL
    )
    image = _image_ref(payload.get("image"), "image")
    if action == "image2video" and image is None:
        raise InvalidRequest(
            "Missing required parameter: 'image'.", param="image", code="missing_required_parameter"
        )
    prompt = check.optional_text(payload, "prompt") or ""
    if action == "text2video" and not prompt.strip():
        raise InvalidRequest(
            "Missing required parameter: 'prompt'.", param="prompt", code="missing_required_parameter"
        )
    if len(prompt) > 2500:
        raise InvalidRequest("'prompt' is longer than 2500 characters.", param="prompt", code="invalid_value")
    duration = payload.get("duration")
    if duration is not None and str(duration) not in ("5", "10"):
        raise InvalidRequest(
            'Invalid value for \'duration\': expected "5" or "10".', param="duration", code="invalid_value"
        )
    external = check.optional_text(payload, "external_task_id")
    if external is not None and (len(external) > 200 or "\x00" in external):
        # Stored in its own text column, where PostgreSQL cannot hold a NUL.
        raise InvalidRequest(
            "'external_task_id' must be at most 200 characters, without NUL.",
            param="external_task_id",
            code="invalid_value",
        )
    fields = _drop_none(
        {
            "prompt": prompt,
            "negative_prompt": check.optional_text(payload, "negative_prompt"),
            "cfg_scale": check.number(payload, "cfg_scale", 0, 1),
            "mode": check.choice(payload, "mode", ("std", "pro")),
            "aspect_ratio": check.choice(payload, "aspect_ratio", KLING_ASPECTS, "16:9"),
            "seconds": float(duration) if duration is not None else 5.0,
            "image": image,
            "image_tail": _image_ref(payload.get("image_tail"), "image_tail"),
            "external_task_id": external,
            "native_format": "kling",
            "native": {k: v for k, v in payload.items() if k != "callback_url"},
        }
    )
    return VideoRequest(model, action, fields)


def from_veo(payload: dict[str, Any], model: str) -> VideoRequest:
    """The Gemini API's `predictLongRunning` body for Veo."""
    instances = payload.get("instances")
    if not isinstance(instances, list) or not instances or not isinstance(instances[0], dict):
        raise InvalidRequest("'instances' must be a non-empty array of objects.", param="instances")
    instance = instances[0]
    prompt = check.optional_text(instance, "prompt") or ""
    image = instance.get("image")
    image_ref = None
    if image is not None:
        if not isinstance(image, dict) or not isinstance(image.get("bytesBase64Encoded"), str):
            raise InvalidRequest("'instances[0].image' needs bytesBase64Encoded.", param="image")
        mime = image.get("mimeType") if isinstance(image.get("mimeType"), str) else "image/png"
        image_ref = f"data:{mime};base64,{image['bytesBase64Encoded']}"
    if not prompt.strip() and image_ref is None:
        raise InvalidRequest("Missing required parameter: 'instances[0].prompt'.", param="prompt")
    params = payload.get("parameters")
    params = {} if params is None else params
    if not isinstance(params, dict):
        raise InvalidRequest("'parameters' must be an object.", param="parameters")
    resolution = check.choice(params, "resolution", ("720p", "1080p"))
    aspect = check.choice(params, "aspectRatio", VEO_ASPECTS, "16:9") or "16:9"
    short = 1080 if resolution == "1080p" else 720
    long = short * 16 // 9
    width, height = (long, short) if aspect == "16:9" else (short, long)
    fields = _drop_none(
        {
            "prompt": prompt,
            "negative_prompt": check.optional_text(params, "negativePrompt"),
            "seconds": float(check.integer(params, "durationSeconds", 1, MAX_SECONDS) or 8),
            "aspect_ratio": aspect,
            "width": width,
            "height": height,
            "seed": check.integer(params, "seed", 0, 2**32 - 1),
            "image": image_ref,
            "native_format": "veo",
            "native": payload,
        }
    )
    return VideoRequest(model, "image2video" if image_ref else "text2video", fields)
