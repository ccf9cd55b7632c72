"""The music family (`/suno/*`, `api/vendors/suno.py`): submits as `music/validate.py` checks them
and task records as `music/record.py` renders them, every field present, inside the music
envelope `{"code": "success", "message": "", "data"}`."""

from __future__ import annotations

from unigate.music.validate import MAX_CONTINUE_AT, MAX_LENGTHS
from unigate.openapi.schema import (
    JSON,
    MULTIPART,
    Operation,
    Schema,
    any_of,
    array,
    binary,
    body,
    boolean,
    const,
    enum,
    integer,
    json_body,
    json_response,
    link,
    obj,
    ref,
    required_text,
    string,
    text,
)

TAG = "music"
STATUSES = ("SUBMITTED", "QUEUED", "IN_PROGRESS", "SUCCESS", "FAILURE")
_NO_NUL = " No NUL characters."


def _field(name: str, description: str) -> Schema:
    return text(MAX_LENGTHS[name], description + _NO_NUL)


def _hook() -> Schema:
    return _field(
        "notify_hook",
        "A URL that receives the task envelope, signed (Standard Webhooks), on every change. Loopback, "
        "private and metadata addresses are refused (400) unless private webhooks are allowed.",
    )


def _submit_request() -> Schema:
    fields = {
        "prompt": _field("prompt", "The lyrics, with [Verse]/[Chorus] markers."),
        "gpt_description_prompt": _field(
            "gpt_description_prompt", "Description mode: what the song is about."
        ),
        "make_instrumental": {"type": ["boolean", "null"], "description": "Description mode: no vocals."},
        "mv": _field("mv", "The model version (e.g. chirp-v4); `music.default_model` when absent."),
        "title": _field("title", "The song's title."),
        "tags": _field("tags", "Style tags, comma-separated."),
        "task": _field("task", '"extend" continues `continue_clip_id`.'),
        "continue_clip_id": any_of(
            string(format="uuid"),
            enum("", None),
            description="A clip id (UUID) from any of the key's tasks, uploads included; with `continue_at`.",
        ),
        "continue_at": {
            "type": ["integer", "null"],
            "minimum": 0,
            "maximum": MAX_CONTINUE_AT,
            "description": "Seconds into the clip where the continuation starts; with `continue_clip_id`.",
        },
        "notify_hook": _hook(),
    }
    return obj(
        fields,
        description="Either `prompt` (lyrics) or `gpt_description_prompt` (description mode) must be given. "
        '`continue_clip_id` and `continue_at` go together; `task: "extend"` needs a clip.',
        anyOf=[{"required": ["prompt"]}, {"required": ["gpt_description_prompt"]}],
    )


def _clip() -> Schema:
    url = string("An absolute URL; empty until the clip has it.")
    metadata = obj(
        {
            "can_remix": boolean(),
            "edited_clip_id": string(),
            "history": array(
                obj(
                    {
                        "continue_at": {"type": "number"},
                        "id": string(),
                        "infill": boolean(),
                        "source": string(),
                        "type": string(),
                    },
                    ["continue_at", "id", "infill", "source", "type"],
                )
            ),
            "infill": boolean(),
            "is_remix": boolean(),
            "priority": integer(),
            "prompt": string(),
            "stream": boolean(),
            "tags": string(),
            "task": string(),
            "type": enum("gen", "concat", "upload"),
            "gpt_description_prompt": string(),
            "make_instrumental": boolean(),
            "duration": {"type": "number"},
            "error_type": string(),
            "error_message": string(),
        },
        [
            "can_remix",
            "edited_clip_id",
            "history",
            "infill",
            "is_remix",
            "priority",
            "prompt",
            "stream",
            "tags",
            "task",
            "type",
        ],
    )
    flags = (
        "is_public",
        "is_trashed",
        "is_liked",
        "is_handle_updated",
        "is_contest_clip",
        "allow_comments",
        "has_hook",
    )
    counts = ("play_count", "upvote_count", "flag_count")
    props: dict[str, Schema] = {
        "id": string("The clip id (UUID)."),
        "title": string(),
        "audio_url": url,
        "video_url": url,
        "image_url": url,
        "image_large_url": url,
        "major_model_version": string("e.g. v4"),
        "model_name": string(),
        "status": string("submitted, queued, streaming, complete or error."),
        "created_at": string(format="date-time"),
        "handle": string(),
        "display_name": string(),
        "avatar_image_url": string(format="uri"),
        "user_id": string("The owning key's id."),
        "entity_type": const("song_schema"),
        **{name: boolean() for name in flags},
        **{name: integer(0) for name in counts},
        "metadata": metadata,
    }
    return obj(props, list(props))


def _task() -> Schema:
    url = string("The first clip's, once SUCCESS; else empty.")
    lyrics = obj({"text": string(), "title": string(), "status": string()}, ["text", "title", "status"])
    props: dict[str, Schema] = {
        "task_id": string(),
        "notify_hook": string(),
        "action": enum("MUSIC", "LYRICS", "UPLOAD"),
        "status": enum(*STATUSES),
        "fail_reason": string(),
        "submit_time": integer(description="Unix seconds."),
        "start_time": integer(description="Unix seconds; equals submit_time until the job starts."),
        "finish_time": integer(description="Unix seconds; 0 until finished."),
        "progress": string("e.g. 0%, 100%", pattern="^[0-9]{1,3}%$"),
        "search_item": string("The clip ids, comma-separated."),
        "data": any_of(array(ref("MusicClip")), lyrics, description="The clips; for LYRICS the lyrics."),
        "audio_url": url,
        "video_url": url,
        "image_url": url,
        "image_large_url": url,
        "major_model_version": string(),
        "model_name": string(),
        "prompt": string(),
        "type": string("gen, lyrics or upload once SUCCESS; else empty."),
        "tags": string(),
        "duration": integer(0),
        "error_type": string(),
        "error_message": string(),
        "handle": string(),
        "is_handle_updated": boolean(),
        "is_trashed": boolean(),
        "reaction": {"type": "null"},
        "created_at": string("ISO 8601 once SUCCESS; else empty."),
        "title": string(),
    }
    return obj(props, list(props), "A music task, every field present.")


def _envelope(data: Schema) -> Schema:
    return obj({"code": const("success"), "message": const(""), "data": data}, ["code", "message", "data"])


def schemas() -> dict[str, Schema]:
    return {
        "MusicSubmitRequest": _submit_request(),
        "MusicClip": _clip(),
        "MusicTask": _task(),
        "MusicTaskEnvelope": _envelope(ref("MusicTask")),
    }


def _task_links() -> dict[str, Schema]:
    task_id = "$response.body#/data/task_id"
    return {
        "fetch": link("fetchMusicTask", "The task, as it advances.", task_id=task_id),
        "internals": link(
            "adminTask", "The task's upstream id, ledger and webhook state (admin).", task_id=task_id
        ),
    }


def operations() -> list[Operation]:
    task = {"200": json_response("The whole task record.", ref("MusicTaskEnvelope"))}
    short = {name: _field(name, d) for name, d in (("mv", "The model version."), ("title", "The title."))}
    upload = body(
        {
            MULTIPART: obj({"file": binary("WAV or MP3 audio."), **short, "notify_hook": _hook()}, ["file"]),
            JSON: obj(
                {
                    "url": required_text(description="Where to fetch the audio (SSRF-guarded)."),
                    **short,
                    "notify_hook": _hook(),
                },
                ["url"],
            ),
        }
    )
    lyrics = obj(
        {
            "prompt": _field("prompt", "What the song is about (required, not blank)."),
            "mv": short["mv"],
            "notify_hook": _hook(),
        },
        ["prompt"],
    )
    fetch = obj(
        {
            "ids": array(
                string(), maxItems=200, description="Task ids; unknown and other keys' ids are left out."
            ),
            "action": {"type": ["string", "null"], "description": "MUSIC (uploads included) or LYRICS."},
        },
        ["ids"],
    )
    return [
        Operation(
            "POST",
            "/suno/submit/music",
            "submitMusic",
            "Submit a music task",
            TAG,
            task,
            json_body(
                ref("MusicSubmitRequest"),
                {
                    "prompt": "[Verse]\nCity lights\n[Chorus]\nWe run",
                    "mv": "chirp-v4",
                    "title": "Night Run",
                    "tags": "synthwave, upbeat",
                },
            ),
            description="Answers at once with the task: SUBMITTED, progress 0%, two clips whose ids are "
            "`search_item`, empty result addresses. It is stored (and its price reserved) before the "
            "answer; a submit the upstream rejects is neither stored nor charged.",
            deprecated=False,
            links=_task_links(),
        ),
        Operation(
            "POST",
            "/suno/submit/lyrics",
            "submitLyrics",
            "Submit a lyrics task",
            TAG,
            task,
            json_body(lyrics, {"prompt": "a song about the sea"}),
            description="Uses the model `suno-lyrics` when configured, else `mv` or the default. Its record "
            "has action LYRICS, no clips, and `data` `{text, title, status}`.",
            links=_task_links(),
        ),
        Operation(
            "POST",
            "/suno/upload/audio",
            "uploadAudio",
            "Upload audio to continue",
            TAG,
            task,
            upload,
            description="A clip (WAV or MP3) that `continue_clip_id` can continue; free.",
            links=_task_links(),
        ),
        Operation(
            "GET",
            "/suno/fetch/{task_id}",
            "fetchMusicTask",
            "Fetch one task",
            TAG,
            task,
        ),
        Operation(
            "POST",
            "/suno/fetch",
            "fetchMusicTasks",
            "Fetch several tasks",
            TAG,
            {"200": json_response("The key's tasks among `ids`.", _envelope(array(ref("MusicTask"))))},
            json_body(fetch, {"ids": ["2f1c5a8e-0000-4000-8000-000000000000"], "action": "MUSIC"}),
        ),
    ]
