"""Stability's stable-image generate form (`api/vendors/stability.py`), one for the three
generators of `/stability/v2beta/stable-image/generate/{variant}`.

What depends on the path's generator is no body's declaration and is checked by the router:
sd3's formats (no webp) and `model`, core's `style_preset` and that core takes no image."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias

from msgspec import Meta

from unigate.errors import InvalidRequest
from unigate.shapes.declare import Body, Shape
from unigate.shapes.refusal import Upload

ASPECT_RATIOS = ("16:9", "1:1", "21:9", "2:3", "3:2", "4:5", "5:4", "9:16", "9:21")
STYLE_PRESETS = (
    "3d-model", "analog-film", "anime", "cinematic", "comic-book", "digital-art", "enhance", "fantasy-art",
    "isometric", "line-art", "low-poly", "modeling-compound", "neon-punk", "origami", "photographic",
    "pixel-art", "tile-texture",
)  # fmt: skip
SD3_MODELS = ("sd3.5-large", "sd3.5-large-turbo", "sd3.5-medium", "sd3.5-flash")

if TYPE_CHECKING:
    AspectRatio: TypeAlias = str
else:  # from the one list ("": the default)
    AspectRatio = Literal[(*ASPECT_RATIOS, "")]


class StabilityRequest(Body):
    prompt: Annotated[str, Meta(min_length=1, max_length=10_000)]
    negative_prompt: str | None = None
    aspect_ratio: AspectRatio | None = None
    seed: Annotated[int, Meta(ge=0, le=4_294_967_294)] | None = None
    output_format: Annotated[
        Literal["png", "jpeg", "webp", ""] | None, Meta(description="sd3: png or jpeg.")
    ] = None
    style_preset: Annotated[str | None, Meta(description="core: " + ", ".join(STYLE_PRESETS) + ".")] = None
    image: Annotated[
        Upload | None, Meta(description="Image-to-image (ultra, sd3; not core), with `strength`.")
    ] = None
    strength: Annotated[
        Annotated[float, Meta(ge=0, le=1)] | None, Meta(description="0 to 1; required with `image`.")
    ] = None
    model: Annotated[
        str | None,
        Meta(description="sd3 only: " + ", ".join(SD3_MODELS) + " (`media.sd3_model` when absent)."),
    ] = None

    def __post_init__(self) -> None:
        if self.image is not None and self.strength is None:
            raise InvalidRequest("strength is required with an image.", code="invalid_field")


GENERATE = Shape(StabilityRequest)
