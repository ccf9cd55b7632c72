"""The music family's request bodies (`/suno/*`, `api/vendors/suno.py`): music and lyrics
submits, audio uploads (a form with the file, or JSON with its URL) and batch fetches. Refusals
are worded as the music envelope's clients read them (`MUSIC`: "Invalid 'title': must be ...").

Stated here and checked by the declarations: types, lengths, no NUL in stored text, the
continuation rules. Not a declaration's to say: whether `notify_hook` may be called (the SSRF
guard and `tasks.allow_private_webhooks`, `music/validate.py`) and whether a clip exists."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from msgspec import Meta

from unigate.errors import InvalidRequest
from unigate.shapes.declare import Body, Shape
from unigate.shapes.refusal import Upload, Wording

MAX_CONTINUE_AT = 24 * 3600
MAX_FETCH_IDS = 200
_UUID = r"^$|^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

MUSIC = Wording(
    wrong_type="Invalid '{param}': must be {expected}.",
    wrong_value="Invalid '{param}': must be {expected}.",
    missing="Invalid '{param}': is required.",
    missing_file="Invalid '{param}': the multipart file part is required.",
    unknown="Invalid '{param}': unknown field.",
    type_code="invalid_request",
    value_code="invalid_request",
    missing_code="invalid_request",
    unknown_code="invalid_request",
)


def _text(most: int, description: str) -> Any:
    """An optional stored text field: at most `most` characters, no NUL (PostgreSQL's text
    cannot hold one)."""
    return Annotated[
        Annotated[str, Meta(max_length=most, pattern=r"^[^\x00]*$")] | None,
        Meta(
            description=description + " No NUL characters.",
            extra={"expected": f"a string of at most {most} characters, without NUL"},
        ),
    ]


if TYPE_CHECKING:
    # What each is to a type checker; at run time, the annotated types below.
    Hook: TypeAlias = str | None
    Mv: TypeAlias = str | None
    Title: TypeAlias = str | None
    Lyrics: TypeAlias = str | None
    Description: TypeAlias = str | None
    Tags: TypeAlias = str | None
    TaskName: TypeAlias = str | None
    LyricsPrompt: TypeAlias = str | None
else:
    Hook = _text(
        2048,
        "A URL that receives the task envelope, signed (Standard Webhooks), on every change. Loopback, "
        "private and metadata addresses are refused (400) unless private webhooks are allowed.",
    )
    Mv = _text(100, "The model version (e.g. chirp-v4); `music.default_model` when absent.")
    Title = _text(200, "The song's title.")
    Lyrics = _text(5000, "The lyrics, with [Verse]/[Chorus] markers.")
    Description = _text(3000, "Description mode: what the song is about.")
    Tags = _text(1000, "Style tags, comma-separated.")
    TaskName = _text(40, '"extend" continues `continue_clip_id`.')
    LyricsPrompt = _text(5000, "What the song is about (required, not blank).")


def _bad(param: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"Invalid '{param}': {message}.", param=param, code="invalid_request")


class MusicSubmitRequest(Body):
    """Either `prompt` (lyrics) or `gpt_description_prompt` (description mode) must be given.
    `continue_clip_id` and `continue_at` go together; `task: "extend"` needs a clip."""

    prompt: Lyrics = None
    gpt_description_prompt: Description = None
    make_instrumental: Annotated[bool | None, Meta(description="Description mode: no vocals.")] = None
    mv: Mv = None
    title: Title = None
    tags: Tags = None
    task: TaskName = None
    continue_clip_id: Annotated[
        Annotated[str, Meta(pattern=_UUID)] | None,
        Meta(
            description="A clip id (UUID) from any of the key's tasks, uploads included; with `continue_at`.",
            extra={"expected": "a clip id in UUID form"},
        ),
    ] = None
    continue_at: Annotated[
        Annotated[int, Meta(ge=0, le=MAX_CONTINUE_AT)] | None,
        Meta(
            description="Seconds into the clip where the continuation starts; with `continue_clip_id`.",
            extra={"expected": f"an integer number of seconds between 0 and {MAX_CONTINUE_AT}"},
        ),
    ] = None
    notify_hook: Hook = None

    def __post_init__(self) -> None:
        clip = bool(self.continue_clip_id)
        if clip and self.continue_at is None:
            raise _bad("continue_at", "is required with continue_clip_id")
        if self.continue_at is not None and not clip:
            raise _bad("continue_clip_id", "is required with continue_at")
        if self.task == "extend" and not clip:
            raise _bad("continue_clip_id", "is required when task is 'extend'")
        if not (self.prompt or "").strip() and not (self.gpt_description_prompt or "").strip():
            raise InvalidRequest(
                "Either 'prompt' (lyrics) or 'gpt_description_prompt' (description mode) is required.",
                param="prompt",
                code="invalid_request",
            )


class LyricsSubmitRequest(Body):
    prompt: LyricsPrompt
    mv: Mv = None
    notify_hook: Hook = None

    def __post_init__(self) -> None:
        if not (self.prompt or "").strip():
            raise InvalidRequest("'prompt' is required for lyrics.", param="prompt", code="prompt_empty")


class AudioUploadForm(Body):
    file: Annotated[Upload, Meta(description="WAV or MP3 audio.")]
    mv: Mv = None
    title: Title = None
    notify_hook: Hook = None


class AudioUploadByURL(Body):
    url: Annotated[str, Meta(min_length=1, description="Where to fetch the audio (SSRF-guarded).")]
    mv: Mv = None
    title: Title = None
    notify_hook: Hook = None


class MusicFetchRequest(Body):
    ids: Annotated[
        list[str],
        Meta(max_length=MAX_FETCH_IDS, description="Task ids; unknown and other keys' ids are left out."),
    ]
    action: Annotated[str | None, Meta(description="MUSIC (uploads included) or LYRICS.")] = None


SUBMIT = Shape(MusicSubmitRequest, MUSIC)
LYRICS = Shape(LyricsSubmitRequest, MUSIC)
UPLOAD_FORM = Shape(AudioUploadForm, MUSIC)
UPLOAD_URL = Shape(AudioUploadByURL, MUSIC)
FETCH = Shape(MusicFetchRequest, MUSIC)
