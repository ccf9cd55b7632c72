"""The image family's request bodies in OpenAI's format (`api/openai/images.py`): generations
(JSON), edits as a multipart form and edits as JSON with image references (`image_refs.py`).
The three share the generation fields (`ImageFields`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from msgspec import Meta

from unigate.edge.media_types import IMAGE_CONTENT_TYPES
from unigate.shapes.declare import Body, ClosedBody, Schema, Shape
from unigate.shapes.refusal import Upload

MAX_PROMPT = 32_000
MAX_IMAGES = 16
if TYPE_CHECKING:
    OutputFormat = str
else:  # the formats the gateway serves images in, from their one list
    OutputFormat = Literal[(*IMAGE_CONTENT_TYPES, "")]


class ImageFields(Body):
    """The fields generations and edits share."""

    prompt: Annotated[str, Meta(min_length=1, max_length=MAX_PROMPT)]
    model: Annotated[str | None, Meta(description="`media.default_image_model` when absent.")] = None
    n: Annotated[int, Meta(ge=1, le=10)] | None = None
    size: Annotated[
        Annotated[str, Meta(pattern=r"^(auto|\d{2,5}x\d{2,5})$")] | None,
        Meta(
            description="WIDTHxHEIGHT or auto.", extra={"expected": "WIDTHxHEIGHT (e.g. 1024x1024) or auto"}
        ),
    ] = None
    response_format: Annotated[
        Literal["url", "b64_json", ""] | None,
        Meta(description="url: stored by the gateway (sandbox) or the upstream's link."),
    ] = None
    output_format: OutputFormat | None = None
    background: Literal["transparent", "opaque", "auto", ""] | None = None
    output_compression: Annotated[int, Meta(ge=0, le=100)] | None = None
    quality: str | None = None
    style: str | None = None


class ImageGenerationRequest(ImageFields):
    pass


class ImageEditRequest(ImageFields, kw_only=True):
    """One `image`, or several as `image[]` (at most 16)."""

    image: Annotated[
        list[Upload],
        Meta(min_length=1, max_length=MAX_IMAGES, description="PNG, JPEG or WebP images."),
    ]
    mask: Annotated[
        Upload | None, Meta(description="A PNG whose transparent pixels mark what to change.")
    ] = None


class ImageReference(ClosedBody):
    """Exactly one of `image_url` and `file_id`."""

    image_url: Annotated[
        Annotated[str, Meta(min_length=1)] | None,
        Meta(description="A base64 data URL, or an http(s) URL the gateway fetches."),
    ] = None
    file_id: Annotated[
        str | None, Meta(description="OpenAI's Files API is not served here: refused with a 400.")
    ] = None

    def __post_init__(self) -> None:
        if (self.image_url is None) == (self.file_id is None):
            raise ValueError("exactly one of 'image_url' and 'file_id'")


class ImageEditJsonRequest(ImageFields, kw_only=True):
    """The images as references instead of files; the gateway reads them and relays the edit
    as a multipart one."""

    images: Annotated[list[ImageReference], Meta(min_length=1, max_length=MAX_IMAGES)]
    mask: ImageReference | None = None


def _image_or_images(schema: Schema) -> None:
    """A form sends several images as repeated `image` parts or, as OpenAI's SDKs do, as
    `image[]`: one field under two names, which a declaration cannot say."""
    image = schema["properties"]["image"]
    schema["properties"]["image[]"] = {**image, "description": "Several images (OpenAI's SDKs)."}
    schema["required"].remove("image")
    schema["anyOf"] = [{"required": ["image"]}, {"required": ["image[]"]}]


GENERATION = Shape(ImageGenerationRequest)
EDIT_FORM = Shape(ImageEditRequest, patch=_image_or_images)
EDIT_JSON = Shape(ImageEditJsonRequest)
