"""PicWish's create bodies (`api/vendors/picwish.py`): a multipart form with the image (and an
inpaint mask) as files, or the same fields urlencoded or as JSON with the image by URL. PicWish
takes numbers as numbers or as their text (`sync=1`, `"sync": 1`), so both are declared.

The tools' own parameters are declared by type only: which values one takes depends on the
path's tool (`type` is person/object/stamp for segmentation, clean/face for scale), which a
body's declaration cannot see, so `tool_params` checks them per tool (as it does inpaint's one
mask source). The callback URL's SSRF policy is checked by the router."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from unigate.errors import InvalidRequest
from unigate.shapes.declare import Body, Shape
from unigate.shapes.refusal import Upload
from unigate.shapes.video import Callback

MAX_URL = 4096
OCR_FORMATS = ("txt", "pdf", "docx", "xlsx", "pptx")
_HTTP = r"^$|^\s*https?://"  # "" is absent

ImageURL = Annotated[
    Annotated[str, Meta(max_length=MAX_URL, pattern=_HTTP)] | None,
    Meta(
        description="An http(s) URL; exactly one of image_file and image_url.",
        extra={"expected": f"an http(s) URL of at most {MAX_URL} characters"},
    ),
]
Param = str | int | None


class PicWishFields(Body):
    """The tool's parameters apply to its own path only; others are ignored."""

    image_url: ImageURL = None
    sync: Annotated[
        Literal[0, 1] | Literal["0", "1", ""] | None,
        Meta(description="1: wait for the task (30 s visual, 120 s OCR).", extra={"expected": "0 or 1"}),
    ] = None
    return_type: Annotated[
        Literal[1] | Literal["1", ""] | None,
        Meta(
            description="1: result URLs (the only form the gateway answers).",
            extra={"expected": "1: the gateway answers result URLs only"},
        ),
    ] = None
    callback_url: Callback = None
    type: Annotated[
        Param, Meta(description="segmentation: person, object or stamp; scale: clean or face.")
    ] = None
    output_type: Annotated[Param, Meta(description="segmentation: 1, 2 or 3.")] = None
    crop: Annotated[Param, Meta(description="segmentation: 0 or 1.")] = None
    format: Annotated[
        Param, Meta(description="segmentation: png or jpg; ocr: " + ", ".join(OCR_FORMATS) + ".")
    ] = None
    bg_color: Annotated[Param, Meta(description="segmentation: hex colour, e.g. FFFFFF.")] = None
    mask_url: Annotated[str | None, Meta(description="inpaint: an http(s) URL.")] = None
    rectangles: Annotated[
        str | list[Any] | None, Meta(description='inpaint: JSON [{"x", "y", "width", "height"}].')
    ] = None
    scale_factor: Annotated[Param, Meta(description="scale: 1, 2 (default) or 4.")] = None
    language: Annotated[str | None, Meta(description="ocr: comma-separated languages.")] = None


def _one_image() -> InvalidRequest:
    return InvalidRequest(
        "Give exactly one of 'image_file' (an uploaded image) and 'image_url'.",
        param="image_file",
        code="invalid_request",
    )


class PicWishForm(PicWishFields, kw_only=True):
    image_file: Annotated[Upload | None, Meta(description="A PNG, JPEG or WebP image.")] = None
    mask_file: Annotated[Upload | None, Meta(description="inpaint: the mask.")] = None

    def __post_init__(self) -> None:
        if (self.image_file is None) == (not (self.image_url or "").strip()):
            raise _one_image()


class PicWishPlainForm(PicWishFields, kw_only=True):
    def __post_init__(self) -> None:
        if not (self.image_url or "").strip():
            raise _one_image()


FORM = Shape(PicWishForm)
PLAIN = Shape(PicWishPlainForm, lax=True)  # urlencoded values are text; JSON may send either
