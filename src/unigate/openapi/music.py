"""The music family (`/suno/*`, `api/vendors/suno.py`): submits as declared in `shapes/music.py`
and task records as `music/record.py` renders them, every field present, inside the music
envelope `{"code": "success", "message": "", "data"}`."""

from __future__ import annotations

from unigate.openapi.schema import (
    JSON,
    MULTIPART,
    Declared,
    Operation,
    Schema,
    any_of,
    array,
    boolean,
    const,
    declared_json,
    enum,
    integer,
    json_response,
    link,
    obj,
    ref,
    string,
)
from unigate.shapes.music import FETCH, LYRICS, SUBMIT, UPLOAD_FORM, UPLOAD_URL

TAG = "music"
STATUSES = ("SUBMITTED", "QUEUED", "IN_PROGRESS", "SUCCESS", "FAILURE")


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
    return [
        Operation(
            "POST",
            "/suno/submit/music",
            "submitMusic",
            "Submit a music task",
            TAG,
            task,
            declared_json(
                SUBMIT,
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
            declared_json(LYRICS, {"prompt": "a song about the sea"}),
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
            Declared({MULTIPART: UPLOAD_FORM, JSON: UPLOAD_URL}),
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
            declared_json(FETCH, {"ids": ["2f1c5a8e-0000-4000-8000-000000000000"], "action": "MUSIC"}),
        ),
    ]
