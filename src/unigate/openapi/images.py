"""The image family: OpenAI's generations and edits (`api/openai/images.py`) and Stability's
stable-image generators (`api/vendors/stability.py`). Image output of Gemini's generateContent is
described with that operation (gemini.py)."""

from __future__ import annotations

from base64 import b64encode

from unigate.api.serving.media import AVATAR_PNG
from unigate.edge.media_types import IMAGE_CONTENT_TYPES
from unigate.openapi.schema import (
    JSON,
    MULTIPART,
    SSE,
    Declared,
    Operation,
    Schema,
    array,
    binary,
    declared_form,
    declared_json,
    dropped_fields,
    enum,
    integer,
    json_text,
    obj,
    ref,
    response,
    response_header,
    sse_event,
    string,
)
from unigate.shapes.images import EDIT_FORM, EDIT_JSON, GENERATION
from unigate.shapes.stability import GENERATE as STABILITY

TAG = "image"
STAGES = ("partial_image", "completed")


def schemas() -> dict[str, Schema]:
    image = obj({"url": string(), "b64_json": string(), "revised_prompt": string()})
    return {
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
        "ImageStreamEvent": obj(
            {
                "type": enum(*(f"image_{op}.{stage}" for op in ("generation", "edit") for stage in STAGES)),
                "b64_json": string("base64"),
                "partial_image_index": integer(0),
                "created_at": integer(),
                "size": string(),
                "quality": string(),
                "background": string(),
                "output_format": string(),
                "usage": obj({}),
            },
            ["type", "b64_json"],
        ),
        "StabilityImage": obj(
            {"image": string("base64"), "finish_reason": string(), "seed": integer(0)},
            ["image", "finish_reason", "seed"],
        ),
    }


def operations() -> list[Operation]:
    images = {
        "200": response(
            "The images (`url` or `b64_json` items), or with `stream: true` server-sent events: partial "
            "images where the route draws them, then one `….completed` event per image.",
            {
                JSON: ref("ImagesResponse"),
                SSE: sse_event(json_text(ref("ImageStreamEvent")), "One event of the stream.", string()),
            },
            dropped_fields(),
        )
    }
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
            declared_json(
                GENERATION,
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
            Declared(
                {MULTIPART: EDIT_FORM, JSON: EDIT_JSON},
                {
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
            declared_form(STABILITY, {"prompt": "a fox in the snow", "aspect_ratio": "1:1"}),
            path_schemas={"variant": enum("ultra", "core", "sd3")},
            description="ultra and core route stable-image-ultra / stable-image-core; sd3 routes `model`.",
        ),
    ]
