"""The audio family's request bodies in OpenAI's format (`api/openai/audio.py`): transcriptions
and translations (multipart forms with the audio file) and speech (JSON)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from msgspec import Meta, field

from unigate.edge.media_types import SPEECH_CONTENT_TYPES
from unigate.errors import InvalidRequest
from unigate.shapes.declare import Body, Shape
from unigate.shapes.refusal import Upload

MAX_SPEECH_INPUT = 4096
GRANULARITIES = "timestamp_granularities[]"

if TYPE_CHECKING:
    SpeechFormat = str
else:  # the formats speech is encoded in, from their one list ("": the default)
    SpeechFormat = Literal[(*SPEECH_CONTENT_TYPES, "")]


class SpeechToText(Body):
    """A transcription or translation form; `response_format` is the subclass's."""

    file: Annotated[
        Upload, Meta(description="The audio: flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav or webm.")
    ]
    model: Annotated[str, Meta(min_length=1, description="e.g. sandbox-transcribe, whisper-1")]
    language: Annotated[str | None, Meta(description="ISO-639-1, e.g. en.")] = None
    prompt: str | None = None
    temperature: Annotated[float, Meta(ge=0, le=1)] | None = None
    timestamp_granularities: Annotated[
        list[Literal["word", "segment"]], Meta(description="With response_format verbose_json.")
    ] = field(default_factory=list, name=GRANULARITIES)

    def __post_init__(self) -> None:
        if self.timestamp_granularities and getattr(self, "response_format", "") != "verbose_json":
            raise InvalidRequest(
                f"'{GRANULARITIES}' requires response_format 'verbose_json'.",
                param=GRANULARITIES,
                code="invalid_value",
            )


class TranscriptionRequest(SpeechToText, kw_only=True):
    response_format: Annotated[
        Literal["json", "text", "srt", "verbose_json", "vtt", "diarized_json", ""],
        Meta(description="json (default), text, srt, vtt, verbose_json, diarized_json."),
    ] = "json"


class TranslationRequest(SpeechToText, kw_only=True):
    response_format: Annotated[
        Literal["json", "text", "srt", "verbose_json", "vtt", ""],
        Meta(description="json (default), text, srt, vtt, verbose_json."),
    ] = "json"


class VoiceRef(Body):
    id: str


class SpeechRequest(Body):
    model: Annotated[str, Meta(min_length=1, description="e.g. sandbox-tts, tts-1")]
    input: Annotated[str, Meta(min_length=1, max_length=MAX_SPEECH_INPUT)]
    voice: Annotated[
        Annotated[str, Meta(min_length=1)] | VoiceRef,
        Meta(
            description="A voice name, or {id} of a custom voice.",
            extra={"expected": 'a voice name or {"id": ...}'},
        ),
    ]
    response_format: Annotated[SpeechFormat | None, Meta(description="mp3 (default).")] = None
    speed: Annotated[float, Meta(ge=0.25, le=4.0)] | None = None
    instructions: str | None = None
    stream_format: Annotated[
        Literal["audio", "sse", ""] | None, Meta(description="sse: base64 audio delta events.")
    ] = None


TRANSCRIPTION = Shape(TranscriptionRequest)
TRANSLATION = Shape(TranslationRequest)
SPEECH = Shape(SpeechRequest)
