"""Fish Audio's request bodies (`api/vendors/fish.py`): TTS (JSON) and ASR (a multipart form
with the audio). The voice model comes in a `model` header, which is no body's field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias

from msgspec import Meta

from unigate.errors import InvalidRequest
from unigate.shapes.declare import Body, Shape
from unigate.shapes.refusal import Upload

TTS_FORMATS = ("mp3", "wav", "pcm", "opus")
MAX_TEXT = 15_000

if TYPE_CHECKING:
    TTSFormat: TypeAlias = str
else:  # the formats Fish encodes speech in, from their one list ("": the default)
    TTSFormat = Literal[(*TTS_FORMATS, "")]


class FishTTSRequest(Body):
    text: Annotated[str, Meta(min_length=1, max_length=MAX_TEXT)]
    format: Annotated[TTSFormat | None, Meta(description="mp3 (default).")] = None
    sample_rate: Annotated[
        Annotated[int, Meta(ge=8000, le=48000)] | None, Meta(description="opus: 48000 only.")
    ] = None
    latency: Literal["normal", "balanced", "low", ""] | None = None
    mp3_bitrate: Annotated[int, Meta(ge=64, le=192)] | None = None
    normalize: bool | None = None
    reference_id: Annotated[str | None, Meta(description="A voice model id.")] = None

    def __post_init__(self) -> None:
        if self.format == "opus" and self.sample_rate not in (None, 48000):
            raise InvalidRequest("opus is 48000 Hz only.", param="sample_rate", code="invalid_value")


class FishASRForm(Body):
    audio: Annotated[Upload, Meta(description="The audio.")]
    language: str | None = None
    ignore_timestamps: bool | None = None


TTS = Shape(FishTTSRequest)
ASR = Shape(FishASRForm)
