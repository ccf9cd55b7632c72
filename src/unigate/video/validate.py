"""Turn each video family's request into the canonical video job (video/job.py): the body is
checked against its declaration (`shapes/video.py`), a 400 naming the field in the family's own
error shape (the edge renders it), and what a declaration cannot say is checked here (image
files sniffed, a size's sides in range). The client's own body is kept as `native`, so an
upstream that speaks the same format gets it unchanged."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from unigate.edge.media_types import sniff_image
from unigate.edge.multipart import Form
from unigate.errors import InvalidRequest
from unigate.providers.base import InputFile
from unigate.shapes.video import (
    KLING_IMAGE,
    KLING_TEXT,
    SIZE_PATTERN,
    UNIFIED,
    VEO,
    VIDEO_FORM,
    VIDEO_JSON,
    VideoFields,
)

KLING_DEFAULT_MODEL = "kling-v1"
_SIZE = re.compile(SIZE_PATTERN)


@dataclass(slots=True)
class VideoRequest:
    model: str
    action: str  # text2video | image2video
    fields: dict[str, Any]
    files: dict[str, InputFile] = field(default_factory=dict)


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None and v != ""}


def _size(value: str | None, param: str = "size") -> tuple[int, int] | None:
    """WIDTHxHEIGHT (its form declared) with each side 64 to 3840."""
    match = _SIZE.match(value) if value is not None else None
    if match is None:
        return None
    if not (64 <= int(match[1]) <= 3840 and 64 <= int(match[2]) <= 3840):
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


def _ref(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


def from_openai(payload: dict[str, Any], form: Form | None, default_model: str) -> VideoRequest:
    """`POST /v1/videos`: JSON, or multipart (the SDK sends multipart even without a file)."""
    files: dict[str, InputFile] = {}
    image: str | None = None
    sent: VideoFields
    if form is not None:
        sent = on_form = VIDEO_FORM.check_form(form, payload)
        if on_form.input_reference is not None:
            upload = on_form.input_reference.file
            if upload.size == 0:
                raise InvalidRequest("The file 'input_reference' is empty.", param="input_reference")
            files["image"] = _image_file(  # a file's content is no field's type: sniffed
                InputFile(upload.read(), upload.filename, upload.content_type), "input_reference"
            )
        else:
            image = _ref(on_form.input_reference_url)
    else:
        sent = as_json = VIDEO_JSON.check(payload)
        image = _ref(as_json.input_reference.image_url) if as_json.input_reference is not None else None
    size = _size(sent.size)
    seconds = float(sent.seconds) if sent.seconds not in (None, "") else None
    fields = _drop_none(
        {
            "prompt": sent.prompt,
            "seconds": seconds,
            "width": size[0] if size else None,
            "height": size[1] if size else None,
            "size": f"{size[0]}x{size[1]}" if size else None,
            "image": image,
            "native_format": "openai",
            "native": {k: v for k, v in payload.items() if isinstance(v, str | int | float)},
        }
    )
    action = "image2video" if files or image else "text2video"
    return VideoRequest(sent.model or default_model, action, fields, files)


def from_unified(payload: dict[str, Any]) -> VideoRequest:
    """`POST /v1/video/generations` (new-api's unified body)."""
    sent = UNIFIED.check(payload)
    image = _ref(sent.image)
    metadata = sent.metadata or {}
    duration = sent.duration if sent.duration is not None else sent.seconds
    if "seconds" in payload:  # relayed under the body's own name for it
        payload = {k: v for k, v in payload.items() if k != "seconds"} | {"duration": duration}
    fields = _drop_none(
        {
            "prompt": sent.prompt or "",
            "seconds": duration,
            "width": sent.width,
            "height": sent.height,
            "fps": sent.fps,
            "seed": sent.seed,
            "image": image,
            "negative_prompt": metadata.get("negative_prompt"),
            "aspect_ratio": metadata.get("aspect_ratio"),
            "metadata": sent.metadata or None,
            "native_format": "unified",
            "native": payload,
        }
    )
    return VideoRequest(sent.model, "image2video" if image else "text2video", fields)


def from_kling(payload: dict[str, Any], action: str) -> VideoRequest:
    """Kling's `text2video` / `image2video` bodies."""
    sent = (KLING_IMAGE if action == "image2video" else KLING_TEXT).check(payload)
    duration = sent.duration
    fields = _drop_none(
        {
            "prompt": sent.prompt or "",
            "negative_prompt": sent.negative_prompt,
            "cfg_scale": sent.cfg_scale,
            "mode": sent.mode,
            "aspect_ratio": sent.aspect_ratio or "16:9",
            "seconds": float(duration) if duration is not None else 5.0,
            "image": _ref(sent.image),
            "image_tail": _ref(sent.image_tail),
            "external_task_id": sent.external_task_id,
            "native_format": "kling",
            "native": {k: v for k, v in payload.items() if k != "callback_url"},
        }
    )
    return VideoRequest(sent.model_name or sent.model or KLING_DEFAULT_MODEL, action, fields)


def from_veo(payload: dict[str, Any], model: str) -> VideoRequest:
    """The Gemini API's `predictLongRunning` body for Veo."""
    sent = VEO.check(payload)
    instance = sent.instances[0]
    image_ref = None
    if instance.image is not None:
        mime = instance.image.mimeType or "image/png"
        image_ref = f"data:{mime};base64,{instance.image.bytesBase64Encoded}"
    params = sent.parameters
    resolution = params.resolution if params is not None else None
    aspect = (params.aspectRatio if params is not None else None) or "16:9"
    short = 1080 if resolution == "1080p" else 720
    long = short * 16 // 9
    width, height = (long, short) if aspect == "16:9" else (short, long)
    fields = _drop_none(
        {
            "prompt": instance.prompt or "",
            "negative_prompt": params.negativePrompt if params is not None else None,
            "seconds": float((params.durationSeconds if params is not None else None) or 8),
            "aspect_ratio": aspect,
            "width": width,
            "height": height,
            "seed": params.seed if params is not None else None,
            "image": image_ref,
            "native_format": "veo",
            "native": payload,
        }
    )
    return VideoRequest(model, "image2video" if image_ref else "text2video", fields)
