"""The video family in two vendors' own formats: Kling's `/kling/v1/videos/*` (`api/vendors/kling.py`,
its `{"code": 0, …, "data"}` envelope) and Veo's long-running operations on the Gemini API's
paths (`api/gemini/veo.py`), under `/v1beta/` and `/v1/` like the rest of the Gemini surface."""

from __future__ import annotations

from unigate.api.serving.task_family import MAX_CALLBACK
from unigate.openapi.schema import (
    Operation,
    Schema,
    array,
    binary,
    boolean,
    const,
    declared_json,
    enum,
    integer,
    json_response,
    link,
    obj,
    query,
    redirect,
    ref,
    response,
    string,
    text,
)
from unigate.records.veo import METADATA_TYPE, RESPONSE_TYPE
from unigate.shapes.video import KLING_IMAGE, KLING_TEXT
from unigate.shapes.video import VEO as VEO_BODY

KLING, VEO = "kling", "veo"


def callback(description: str = "") -> Schema:
    """A callback URL as `TaskFamily.callback` checks it (SSRF policy applied at submit and again
    at delivery)."""
    return text(MAX_CALLBACK, description or "Receives the task's record, signed, on every change.")


def _kling_task() -> Schema:
    video = obj(
        {"id": string(), "url": string(), "duration": string("Seconds, as text.")}, ["id", "url", "duration"]
    )
    return obj(
        {
            "task_id": string(),
            "task_status": enum("submitted", "processing", "succeed", "failed"),
            "task_status_msg": string(),
            "task_info": obj({"external_task_id": string()}),
            "created_at": integer(description="Unix milliseconds."),
            "updated_at": integer(description="Unix milliseconds."),
            "task_result": obj({"videos": array(video)}, ["videos"]),
        },
        ["task_id", "task_status", "task_status_msg", "task_info", "created_at", "updated_at"],
    )


def _operation() -> Schema:
    sample = obj(
        {
            "video": obj(
                {"uri": string("On the gateway's host; download with your key."), "mimeType": string()},
                ["uri"],
            )
        },
        ["video"],
    )
    return obj(
        {
            "name": string("models/{model}/operations/{id}"),
            "metadata": obj({"@type": const(METADATA_TYPE), "progressPercent": integer(0, 100)}),
            "done": boolean(),
            "error": obj({"code": integer(), "message": string(), "status": string()}, ["code", "message"]),
            "response": obj(
                {
                    "@type": const(RESPONSE_TYPE),
                    "generateVideoResponse": obj({"generatedSamples": array(sample)}, ["generatedSamples"]),
                },
                ["generateVideoResponse"],
            ),
        },
        ["name"],
        "A long-running operation: `done` once finished, then `response` or `error`.",
    )


def schemas() -> dict[str, Schema]:
    return {
        "KlingTask": _kling_task(),
        "KlingEnvelope": obj(
            {"code": const(0), "message": string(), "request_id": string(), "data": ref("KlingTask")},
            ["code", "message", "request_id", "data"],
        ),
        "VeoOperation": _operation(),
    }


def _veo(version: str) -> list[Operation]:
    suffix = "" if version == "v1beta" else "V1"
    models = f"/{version}/models/{{model}}"
    return [
        Operation(
            "POST",
            models + ":predictLongRunning",
            "veoGenerate" + suffix,
            f"Generate a video (Veo, {version})",
            VEO,
            {"200": json_response("The operation's name.", obj({"name": string()}, ["name"]))},
            declared_json(
                VEO_BODY,
                {
                    "instances": [{"prompt": "a paper boat"}],
                    "parameters": {"aspectRatio": "16:9", "durationSeconds": 2},
                },
            ),
            path_examples={"model": "veo-3.0-generate-001"},
        ),
        Operation(
            "GET",
            models + "/operations/{operation}",
            "veoOperation" + suffix,
            f"A Veo operation ({version})",
            VEO,
            {"200": json_response("The operation.", ref("VeoOperation"))},
        ),
        Operation(
            "GET",
            f"/{version}/files/{{name}}:download",
            "veoDownload" + suffix,
            f"Download a Veo video ({version})",
            VEO,
            {
                "200": response("The video.", {"video/mp4": binary()}),
                "302": redirect(),
            },
            parameters=(query("alt", string(), "media, as the operation's `uri` carries it."),),
        ),
    ]


def _kling_links(action: str) -> dict[str, Schema]:
    query = link(
        "klingQuery", "The task, as it advances.", action=action, task_id="$response.body#/data/task_id"
    )
    return {"query": query}


def operations() -> list[Operation]:
    envelope = {"200": json_response("Kling's envelope around the task.", ref("KlingEnvelope"))}
    return [
        Operation(
            "POST",
            "/kling/v1/videos/text2video",
            "klingText2Video",
            "Text to video (Kling format)",
            KLING,
            envelope,
            declared_json(
                KLING_TEXT,
                {"model_name": "kling-v1", "prompt": "a fox in the snow", "duration": "5"},
            ),
            links=_kling_links("text2video"),
        ),
        Operation(
            "POST",
            "/kling/v1/videos/image2video",
            "klingImage2Video",
            "Image to video (Kling format)",
            KLING,
            envelope,
            declared_json(KLING_IMAGE),
            links=_kling_links("image2video"),
        ),
        Operation(
            "GET",
            "/kling/v1/videos/{action}/{task_id}",
            "klingQuery",
            "One Kling task",
            KLING,
            envelope,
            path_schemas={"action": enum("text2video", "image2video")},
            description="By the task id or your `external_task_id`.",
        ),
        *_veo("v1beta"),
        *_veo("v1"),
    ]
