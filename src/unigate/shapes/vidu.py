"""Vidu's request bodies (`api/vendors/vidu.py`): text2audio (sound effects) and lip sync.

Not a declaration's to say, and so checked in `__post_init__`: an input file's URL (http(s) of
bounded length, or a data: URL of any length within the body limit), the lip sync's choice of
driving input; and in the router, a callback URL's SSRF policy."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from unigate.errors import InvalidRequest
from unigate.shapes.declare import Body, Shape
from unigate.shapes.video import Callback

MAX_PROMPT = 1500
MAX_MODEL = 200
MAX_PAYLOAD = 1_048_576
MAX_URL = 4096  # http(s) links; data: URLs are bounded by the JSON body limit instead
MIN_TEXT, MAX_TEXT = 4, 2000
MAX_VOICE_ID = 200
SEED_MAX = 2**31 - 1

Payload = Annotated[
    Annotated[str, Meta(max_length=MAX_PAYLOAD)] | None,
    Meta(description="Your own data, echoed in the task."),
]
_URL_WORDS = f"An http(s) URL (at most {MAX_URL} characters) or a base64 data: URL."


def _url(value: str | None, name: str) -> str:
    """An input file's URL, stripped; "" when absent."""
    value = (value or "").strip()
    link = value and not value.startswith("data:")
    if link and (not value.startswith(("http://", "https://")) or len(value) > MAX_URL):
        raise InvalidRequest(
            f"'{name}' must be an http(s) URL of at most {MAX_URL} characters, or a base64 data URL.",
            param=name,
            code="invalid_value",
        )
    return value


class ViduText2AudioRequest(Body):
    model: Annotated[str, Meta(min_length=1, max_length=MAX_MODEL, description="e.g. audio1.0")]
    prompt: Annotated[str, Meta(min_length=1, max_length=MAX_PROMPT)]
    duration: Annotated[
        Annotated[float, Meta(ge=2, le=10)] | None, Meta(description="Seconds (default 10).")
    ] = None
    seed: Annotated[
        Annotated[int, Meta(ge=0, le=SEED_MAX)] | None, Meta(description="0 or absent: random.")
    ] = None
    payload: Payload = None
    callback_url: Callback = None

    def __post_init__(self) -> None:
        if not self.prompt.strip():
            raise InvalidRequest("'prompt' must not be blank.", param="prompt", code="invalid_value")


class ViduLipSyncRequest(Body):
    """Routes `media.lip_sync_model`; give `audio_url`, or `text` with `voice_id`."""

    video_url: Annotated[str, Meta(min_length=1, description="The video (http(s) or data: URL).")]
    audio_url: Annotated[str | None, Meta(description=f"The speech; wins over `text`. {_URL_WORDS}")] = None
    text: Annotated[
        Annotated[str, Meta(pattern=rf"^$|^[\s\S]{{{MIN_TEXT},{MAX_TEXT}}}$")] | None,
        Meta(
            description="Spoken by `voice_id`.",
            extra={"expected": f"{MIN_TEXT} to {MAX_TEXT} characters"},
        ),
    ] = None
    voice_id: Annotated[
        Annotated[str, Meta(max_length=MAX_VOICE_ID)] | None, Meta(description="Required with `text`.")
    ] = None
    speed: Annotated[float, Meta(ge=0.5, le=2)] | None = None
    volume: Annotated[float, Meta(ge=0, le=10)] | None = None
    ref_photo_url: Annotated[str | None, Meta(description=f"A face to follow. {_URL_WORDS}")] = None
    payload: Payload = None
    callback_url: Callback = None

    def __post_init__(self) -> None:
        video_url = _url(self.video_url, "video_url")
        if not video_url:
            raise InvalidRequest(
                "Missing required parameter: 'video_url'.",
                param="video_url",
                code="missing_required_parameter",
            )
        audio_url = _url(self.audio_url, "audio_url")
        _url(self.ref_photo_url, "ref_photo_url")
        if not audio_url and not self.text:
            raise InvalidRequest(
                "Give the speech to lip-sync: 'audio_url', or 'text' with a 'voice_id'.",
                param="audio_url",
                code="missing_required_parameter",
            )
        if not audio_url and not self.voice_id:
            raise InvalidRequest(
                "'voice_id' is required when 'text' drives the lip sync.",
                param="voice_id",
                code="missing_required_parameter",
            )


TEXT2AUDIO = Shape(ViduText2AudioRequest)
LIP_SYNC = Shape(ViduLipSyncRequest)
