"""The image family: OpenAI's generations and edits (`api/openai/images.py`) and Stability's
stable-image generators (`api/vendors/stability.py`). Image output of Gemini's generateContent is
described with that operation (gemini.py)."""

from __future__ import annotations

from base64 import b64encode

from unigate.api.openai.images import MAX_IMAGES, MAX_PROMPT
from unigate.api.serving.media import AVATAR_PNG
from unigate.api.vendors.stability import ASPECT_RATIOS, SD3_MODELS, STYLE_PRESETS
from unigate.edge.media_types import IMAGE_CONTENT_TYPES
from unigate.openapi.audio import choice
from unigate.openapi.schema import (
    JSON,
    MULTIPART,
    Operation,
    Schema,
    array,
    binary,
    body,
    enum,
    integer,
    json_body,
    json_response,
    multipart_body,
    obj,
    ref,
    required_text,
    response,
    response_header,
    string,
    text,
)

TAG = "image"
_SIZE = r"^(auto|\d{2,5}x\d{2,5})$"


def _common() -> dict[str, Schema]:
    """The fields generations and edits share, as `images.check_common` checks them."""
    return {
        "prompt": required_text(MAX_PROMPT),
        "model": text(description="`media.default_image_model` when absent."),
        "n": {"type": ["integer", "null"], "minimum": 1, "maximum": 10},
        "size": {
            "anyOf": [string(pattern=_SIZE), {"type": "null"}],
            "description": "WIDTHxHEIGHT or auto.",
        },
        "response_format": choice(
            ("url", "b64_json"), "url: stored by the gateway (sandbox) or the upstream's link."
        ),
        "output_format": choice(tuple(IMAGE_CONTENT_TYPES)),
        "background": choice(("transparent", "opaque", "auto")),
        "output_compression": {"type": ["integer", "null"], "minimum": 0, "maximum": 100},
        "quality": text(),
        "style": text(),
    }


def schemas() -> dict[str, Schema]:
    image = obj({"url": string(), "b64_json": string(), "revised_prompt": string()})
    return {
        "ImageGenerationRequest": obj(_common(), ["prompt"]),
        "ImageEditRequest": obj(
            {
                "image": binary("A PNG, JPEG or WebP image."),
                "image[]": array(binary(), maxItems=MAX_IMAGES, description="Several images."),
                "mask": binary("A PNG whose transparent pixels mark what to change."),
                **_common(),
            },
            ["prompt"],
            "One `image`, or several as `image[]` (at most 16).",
            anyOf=[{"required": ["image"]}, {"required": ["image[]"]}],
        ),
        "ImageEditJsonRequest": obj(
            {
                "images": array(ref("ImageReference"), minItems=1, maxItems=MAX_IMAGES),
                "mask": ref("ImageReference"),
                **_common(),
            },
            ["images", "prompt"],
            "The images as references instead of files; the gateway reads them and relays the edit "
            "as a multipart one.",
        ),
        "ImageReference": obj(
            {
                "image_url": required_text(
                    description="A base64 data URL, or an http(s) URL the gateway fetches."
                ),
                "file_id": string("OpenAI's Files API is not served here: refused with a 400."),
            },
            description="Exactly one of `image_url` and `file_id`.",
            closed=True,
            oneOf=[{"required": ["image_url"]}, {"required": ["file_id"]}],
        ),
        "ImagesResponse": obj(
            {
                "created": integer(),
                "data": array(image, minItems=1),
                "output_format": string(),
                "size": string(),
                "usage": obj({}),
            },
            ["created", "data"],
        ),
        "StabilityRequest": obj(
            {
                "prompt": required_text(10_000),
                "negative_prompt": string(),
                "aspect_ratio": choice(ASPECT_RATIOS),
                "seed": integer(0, 4_294_967_294),
                "output_format": choice(("png", "jpeg", "webp"), "sd3: png or jpeg."),
                "style_preset": string("core: " + ", ".join(STYLE_PRESETS) + "."),
                "image": binary("Image-to-image (ultra, sd3; not core), with `strength`."),
                "strength": string("0 to 1; required with `image`."),
                "model": string("sd3 only: " + ", ".join(SD3_MODELS) + " (`media.sd3_model` when absent)."),
            },
            ["prompt"],
        ),
        "StabilityImage": obj(
            {"image": string("base64"), "finish_reason": string(), "seed": integer(0)},
            ["image", "finish_reason", "seed"],
        ),
    }


def operations() -> list[Operation]:
    images = {"200": json_response("The images (`url` or `b64_json` items).", ref("ImagesResponse"))}
    stability_headers = {
        "finish-reason": response_header("SUCCESS, or why the image was filtered (image answers)."),
        "seed": response_header("The seed used (image answers)."),
    }
    stability = response(
        "`Accept: image/*`: the image bytes; `Accept: application/json`: base64 JSON.",
        {
            **{mime: binary() for mime in IMAGE_CONTENT_TYPES.values()},
            JSON: ref("StabilityImage"),
        },
        stability_headers,
    )
    return [
        Operation(
            "POST",
            "/v1/images/generations",
            "createImage",
            "Generate images (OpenAI format)",
            TAG,
            images,
            json_body(
                ref("ImageGenerationRequest"),
                {
                    "model": "sandbox-image",
                    "prompt": "a lighthouse",
                    "size": "256x256",
                    "response_format": "b64_json",
                },
            ),
        ),
        Operation(
            "POST",
            "/v1/images/edits",
            "editImage",
            "Edit images (OpenAI format)",
            TAG,
            images,
            body(
                {MULTIPART: ref("ImageEditRequest"), JSON: ref("ImageEditJsonRequest")},
                examples={
                    JSON: {
                        "model": "sandbox-image",
                        "prompt": "make it blue",
                        "images": [{"image_url": "data:image/png;base64," + b64encode(AVATAR_PNG).decode()}],
                    }
                },
            ),
        ),
        Operation(
            "POST",
            "/stability/v2beta/stable-image/generate/{variant}",
            "stabilityGenerate",
            "Generate an image (Stability format)",
            TAG,
            {"200": stability},
            multipart_body(ref("StabilityRequest"), {"prompt": "a fox in the snow", "aspect_ratio": "1:1"}),
            path_schemas={"variant": enum("ultra", "core", "sd3")},
            description="ultra and core route stable-image-ultra / stable-image-core; sd3 routes `model`.",
        ),
    ]
