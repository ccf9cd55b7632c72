"""The video family's OpenAI-style paths (`api/openai/videos.py`, the `openai` SDK's `videos`
client) and the unified `/v1/video/generations` (`api/unigate/video_generations.py`). Requests are
declared in `shapes/video.py`; records are `records/video.py`'s."""

from __future__ import annotations

from unigate.openapi.schema import (
    JSON,
    MULTIPART,
    Declared,
    Operation,
    Schema,
    any_of,
    array,
    binary,
    boolean,
    choice,
    const,
    declared_json,
    deleted,
    enum,
    integer,
    json_response,
    link,
    number,
    obj,
    page_parameters,
    query,
    redirect,
    ref,
    response,
    response_header,
    string,
)
from unigate.shapes.video import REMIX, UNIFIED, VIDEO_FORM, VIDEO_JSON

TAG = "video"


def _nullable_int() -> Schema:
    return {"type": ["integer", "null"]}


def _video() -> Schema:
    props: dict[str, Schema] = {
        "id": string(),
        "object": const("video"),
        "model": string(),
        "status": enum("queued", "in_progress", "completed", "failed"),
        "progress": integer(0, 100),
        "created_at": integer(description="Unix seconds."),
        "completed_at": _nullable_int(),
        "expires_at": _nullable_int(),
        "seconds": string(),
        "size": string(),
        "prompt": string(),
        "remixed_from_video_id": {"type": ["string", "null"]},
        "error": any_of(obj({"code": string(), "message": string()}, ["code", "message"]), {"type": "null"}),
    }
    return obj(props, list(props), "The `openai` SDK's Video.")


def _unified() -> Schema:
    metadata = obj(
        {
            "duration": number(),
            "fps": {"type": ["integer", "null"]},
            "width": integer(),
            "height": integer(),
            "seed": {"type": ["integer", "null"]},
        },
        ["duration", "fps", "width", "height", "seed"],
    )
    video = _video()
    props = {
        **video["properties"],
        "task_id": string("The same as `id`."),
        "url": {"type": ["string", "null"], "description": "The video, once completed."},
        "format": const("mp4"),
        "metadata": metadata,
    }
    return obj(props, list(props), "The unified record: the Video with task_id, url, format and metadata.")


def schemas() -> dict[str, Schema]:
    return {
        "Video": _video(),
        "VideoList": obj(
            {
                "object": const("list"),
                "data": array(ref("Video")),
                "first_id": {"type": ["string", "null"]},
                "last_id": {"type": ["string", "null"]},
                "has_more": boolean(),
            },
            ["object", "data", "first_id", "last_id", "has_more"],
        ),
        "VideoGeneration": _unified(),
    }


def _video_links() -> dict[str, Schema]:
    video_id = "$response.body#/id"
    return {
        "retrieve": link("getVideo", "The video, as it advances.", video_id=video_id),
        "content": link("getVideoContent", "Its file, once completed.", video_id=video_id),
        "remix": link("remixVideo", "A new video from it, once completed.", video_id=video_id),
        "delete": link("deleteVideo", "Delete it, once finished.", video_id=video_id),
    }


def operations() -> list[Operation]:
    video = {"200": json_response("The video.", ref("Video"))}
    poll = {
        "openai-poll-after-ms": response_header("How long the SDK waits before polling again.", required=True)
    }
    content_types = ("video/mp4", "image/webp", "image/jpeg")
    variant = choice(
        ("video", "thumbnail", "spritesheet"), "video (default), thumbnail (WebP), spritesheet (JPEG)."
    )
    return [
        Operation(
            "POST",
            "/v1/videos",
            "createVideo",
            "Create a video (OpenAI format)",
            TAG,
            video,
            Declared(
                {JSON: VIDEO_JSON, MULTIPART: VIDEO_FORM},
                {
                    JSON: {
                        "model": "sora-2",
                        "prompt": "a lighthouse at dusk",
                        "seconds": "4",
                        "size": "320x240",
                    }
                },
            ),
            description="Stored before the answer (price reserved, refunded once if it fails), then polled.",
            links=_video_links(),
        ),
        Operation(
            "GET",
            "/v1/videos",
            "listVideos",
            "The key's videos",
            TAG,
            {"200": json_response("One page.", ref("VideoList"))},
            parameters=(*page_parameters("video", 100, 20),),
        ),
        Operation(
            "GET",
            "/v1/videos/{video_id}",
            "getVideo",
            "One video",
            TAG,
            {"200": json_response("The video.", ref("Video"), poll)},
        ),
        Operation(
            "DELETE",
            "/v1/videos/{video_id}",
            "deleteVideo",
            "Delete a finished video",
            TAG,
            {
                "200": json_response(
                    "Deleted.",
                    deleted("video.deleted"),
                )
            },
            description="Only completed or failed videos (400 video_not_finished otherwise).",
        ),
        Operation(
            "GET",
            "/v1/videos/{video_id}/content",
            "getVideoContent",
            "Download a video's file",
            TAG,
            {
                "200": response("The file.", {mime: binary() for mime in content_types}),
                "302": redirect(),
            },
            parameters=(query("variant", variant),),
            description="404 not_ready until the video is completed.",
        ),
        Operation(
            "POST",
            "/v1/videos/{video_id}/remix",
            "remixVideo",
            "Remix a completed video",
            TAG,
            video,
            declared_json(REMIX),
            description="Made by the provider that made the original.",
            links=_video_links(),
        ),
        Operation(
            "POST",
            "/v1/video/generations",
            "createVideoGeneration",
            "Create a video (unified format)",
            TAG,
            {"200": json_response("The task.", ref("VideoGeneration"))},
            declared_json(
                UNIFIED,
                {
                    "model": "sandbox-video",
                    "prompt": "a red kite",
                    "duration": 2,
                    "width": 320,
                    "height": 240,
                },
            ),
            links={
                "fetch": link("getVideoGeneration", "The task, as it advances.", task_id="$response.body#/id")
            },
        ),
        Operation(
            "GET",
            "/v1/video/generations/{task_id}",
            "getVideoGeneration",
            "One video task (unified format)",
            TAG,
            {"200": json_response("The task.", ref("VideoGeneration"))},
        ),
    ]
