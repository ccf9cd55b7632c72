"""The video families' request bodies: OpenAI-style `/v1/videos` (JSON or multipart) and its
remix, the unified `/v1/video/generations`, Kling's text2video / image2video and Veo's
`predictLongRunning`. `video/validate.py` turns a checked body into the canonical video job.

Not a declaration's to say, and so checked there: an image file's content (sniffed), a size's
sides within 64-3840 once parsed from WIDTHxHEIGHT, and a callback URL's SSRF policy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from msgspec import Meta, field

from unigate.errors import InvalidRequest
from unigate.shapes.declare import Body, Shape
from unigate.shapes.refusal import Upload

MAX_PROMPT = 32_000
MAX_SECONDS = 60
MAX_KLING_PROMPT = 2500
MAX_IMAGE_REF = 30 * 1024 * 1024  # an image given inline as base64 or a data: URL
MAX_CALLBACK = 2048
SIZE_PATTERN = r"^\s*(\d{2,4})x(\d{2,4})\s*$"
KLING_ASPECTS = ("16:9", "9:16", "1:1")
VEO_ASPECTS = ("16:9", "9:16")
_SECONDS_TEXT = r"^([1-9]|[1-5][0-9]|60)?$"  # 1 to 60 as text (the SDK sends a string), or ""

Prompt = Annotated[str, Meta(min_length=1, max_length=MAX_PROMPT)]
ImageRef = Annotated[
    Annotated[str, Meta(max_length=MAX_IMAGE_REF)] | None,
    Meta(
        description="An http(s) URL, a data: URL or base64.",
        extra={"expected": "an image URL or base64 string"},
    ),
]
Seed = Annotated[int, Meta(ge=0, le=2**32 - 1)]
Callback = Annotated[
    Annotated[str, Meta(max_length=MAX_CALLBACK)] | None,
    Meta(
        description="Receives the task's record, signed, on every change.",
        extra={"expected": f"a URL of at most {MAX_CALLBACK} characters"},
    ),
]
if TYPE_CHECKING:
    KlingAspect: TypeAlias = str
    VeoAspect: TypeAlias = str
else:  # the aspect ratios each vendor takes, from their one list ("": the default)
    KlingAspect = Literal[(*KLING_ASPECTS, "")]
    VeoAspect = Literal[(*VEO_ASPECTS, "")]


def _required(param: str) -> InvalidRequest:
    return InvalidRequest(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


class VideoFields(Body):
    """What the OpenAI-style create's JSON and form share."""

    prompt: Prompt
    model: Annotated[str | None, Meta(description="`media.default_video_model` when absent.")] = None
    seconds: Annotated[
        Annotated[int, Meta(ge=1, le=MAX_SECONDS)] | Annotated[str, Meta(pattern=_SECONDS_TEXT)] | None,
        Meta(description="Default 4.", extra={"expected": f"an integer from 1 to {MAX_SECONDS}"}),
    ] = None
    size: Annotated[
        Annotated[str, Meta(pattern=SIZE_PATTERN)] | None,
        Meta(
            description="WIDTHxHEIGHT, each side 64 to 3840, e.g. 720x1280.",
            extra={"expected": "WIDTHxHEIGHT such as 720x1280, each side 64 to 3840"},
        ),
    ] = None


class VideoReference(Body):
    image_url: ImageRef = None


class VideoCreateRequest(VideoFields, kw_only=True):
    input_reference: Annotated[
        VideoReference | None, Meta(extra={"expected": "a file or an object with image_url"})
    ] = None


class VideoCreateForm(VideoFields, kw_only=True):
    input_reference: Annotated[
        Upload | None, Meta(description="A PNG, JPEG or WebP image to start from.")
    ] = None
    input_reference_url: Annotated[
        ImageRef, Meta(description="A start image by reference instead of a file.")
    ] = field(default=None, name="input_reference[image_url]")


class VideoRemixRequest(Body):
    prompt: Prompt


class VideoGenerationRequest(Body):
    """new-api's unified body; `width` and `height` go together."""

    model: Annotated[str, Meta(min_length=1, max_length=200)]
    prompt: Annotated[
        Annotated[str, Meta(max_length=MAX_PROMPT)] | None,
        Meta(description="Required unless `image` is given."),
    ] = None
    image: ImageRef = None
    duration: Annotated[float, Meta(ge=0.5, le=MAX_SECONDS)] | None = None
    seconds: (
        Annotated[
            float,
            Meta(
                ge=0.5, le=MAX_SECONDS, description="The same as `duration` (the OpenAI videos API's name)."
            ),
        ]
        | None
    ) = None
    width: Annotated[int, Meta(ge=64, le=3840)] | None = None
    height: Annotated[int, Meta(ge=64, le=3840)] | None = None
    fps: Annotated[int, Meta(ge=1, le=60)] | None = None
    seed: Seed | None = None
    metadata: Annotated[dict[str, Any] | None, Meta(description="Passed through to the upstream.")] = None

    def __post_init__(self) -> None:
        if not (self.prompt or "").strip() and not self.image:
            raise _required("prompt")
        if self.seconds is not None and self.duration is not None and self.seconds != self.duration:
            raise InvalidRequest(
                "Give 'duration' or 'seconds' (the same length, in seconds), not two different values.",
                param="seconds",
                code="invalid_value",
            )
        if (self.width is None) != (self.height is None):
            raise InvalidRequest(
                "Give both 'width' and 'height', or neither.", param="width", code="invalid_value"
            )


class KlingVideoRequest(Body):
    model_name: Annotated[str | None, Meta(description="The model id; kling-v1 when absent.")] = None
    model: str | None = None
    negative_prompt: str | None = None
    cfg_scale: Annotated[float, Meta(ge=0, le=1)] | None = None
    mode: Literal["std", "pro", ""] | None = None
    aspect_ratio: KlingAspect | None = None
    duration: Annotated[
        Literal["5", "10", 5, 10] | None,
        Meta(description='"5" (default) or "10" seconds.', extra={"expected": '"5" or "10"'}),
    ] = None
    image_tail: ImageRef = None
    external_task_id: Annotated[
        Annotated[str, Meta(max_length=200, pattern=r"^[^\x00]*$")] | None,
        Meta(
            description="Your own id; the task can be queried by it (unique per key).",
            extra={"expected": "at most 200 characters, without NUL"},
        ),
    ] = None
    callback_url: Callback = None


class KlingText2VideoRequest(KlingVideoRequest, kw_only=True):
    prompt: Annotated[str, Meta(min_length=1, max_length=MAX_KLING_PROMPT)]
    image: ImageRef = None

    def __post_init__(self) -> None:
        if not self.prompt.strip():
            raise _required("prompt")


class KlingImage2VideoRequest(KlingVideoRequest, kw_only=True):
    image: Annotated[
        str, Meta(min_length=1, max_length=MAX_IMAGE_REF, description="An http(s) URL or base64 image.")
    ]
    prompt: Annotated[str, Meta(max_length=MAX_KLING_PROMPT)] | None = None


class VeoImage(Body):
    bytesBase64Encoded: str  # the Gemini API's names
    mimeType: str | None = None


class VeoInstance(Body):
    prompt: Annotated[str | None, Meta(description="Required unless `image` is given.")] = None
    image: VeoImage | None = None


class VeoParameters(Body):
    aspectRatio: VeoAspect | None = None  # the Gemini API's names
    resolution: Literal["720p", "1080p", ""] | None = None
    durationSeconds: Annotated[int, Meta(ge=1, le=MAX_SECONDS)] | None = None
    negativePrompt: str | None = None
    seed: Seed | None = None


class VeoRequest(Body):
    instances: Annotated[list[VeoInstance], Meta(min_length=1)]
    parameters: VeoParameters | None = None

    def __post_init__(self) -> None:
        first = self.instances[0]
        if not (first.prompt or "").strip() and first.image is None:
            raise _required("instances[0].prompt")


VIDEO_JSON = Shape(VideoCreateRequest)
VIDEO_FORM = Shape(VideoCreateForm)
REMIX = Shape(VideoRemixRequest)
UNIFIED = Shape(VideoGenerationRequest)
KLING_TEXT = Shape(KlingText2VideoRequest)
KLING_IMAGE = Shape(KlingImage2VideoRequest)
VEO = Shape(VeoRequest)
