"""The task families with vendors' own paths: Vidu's sound effects and lip sync under
`/ent/v2/*` (`api/vendors/vidu.py`, records in `records/vidu.py`) and PicWish's visual and document
tools under `/api/tasks/*` (`api/vendors/picwish.py`, records in `records/picwish.py`)."""

from __future__ import annotations

from unigate.api.vendors import picwish
from unigate.openapi.schema import (
    FORM,
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
    number,
    obj,
    ref,
    string,
)
from unigate.shapes.picwish import FORM as PICWISH_FORM
from unigate.shapes.picwish import PLAIN as PICWISH_PLAIN
from unigate.shapes.vidu import LIP_SYNC, TEXT2AUDIO

VIDU, PICWISH = "vidu", "picwish"
_STATES = ("created", "queueing", "processing", "success", "failed")


def _vidu_schemas() -> dict[str, Schema]:
    echo = {
        "video_url": string(),
        "audio_url": string(),
        "text": string(),
        "voice_id": string(),
        "speed": number(),
        "volume": number(),
        "ref_photo_url": string(),
    }
    return {
        "ViduCreation": obj(
            {
                "task_id": string(),
                "state": enum(*_STATES),
                "model": string(),
                "prompt": string(),
                "duration": number(),
                "seed": integer(),
                **echo,
                "payload": string(),
                "credits": number(0),
                "created_at": string(format="date-time"),
            },
            ["task_id", "state", "model", "credits", "created_at"],
            "The answer to a create: the task and what it was asked.",
        ),
        "ViduTask": obj(
            {
                "id": string(),
                "state": enum(*_STATES),
                "err_code": string("The failure reason of a failed task; else empty."),
                "credits": number(0),
                "payload": string(),
                "bgm": boolean(),
                "off_peak": boolean(),
                "creations": array(
                    obj({"id": string(), "url": string(), "cover_url": string()}, ["id", "url", "cover_url"])
                ),
            },
            ["id", "state", "err_code", "credits", "payload", "bgm", "off_peak", "creations"],
        ),
    }


def _picwish_task() -> Schema:
    time = {"type": ["integer", "null"], "description": "Unix seconds; null until it happens."}
    return obj(
        {
            "task_id": string(),
            "state": enum(0, 4, 1, -1, description="0 queued, 4 processing, 1 done, -1 failed."),
            "state_detail": string(),
            "progress": integer(0, 100),
            "return_type": const(1),
            "image": string("Visual tools: the result, once done."),
            "mask": string(),
            "file": string("OCR: the result, once done."),
            "created_at": integer(),
            "processed_at": time,
            "completed_at": time,
        },
        [
            "task_id",
            "state",
            "state_detail",
            "progress",
            "return_type",
            "created_at",
            "processed_at",
            "completed_at",
        ],
    )


def schemas() -> dict[str, Schema]:
    return {
        **_vidu_schemas(),
        "PicWishTask": _picwish_task(),
        "PicWishEnvelope": obj(
            {"status": const(200), "message": const("success"), "data": ref("PicWishTask")},
            ["status", "message", "data"],
        ),
    }


def _picwish(kind: str, tools: tuple[str, ...]) -> list[Operation]:
    title = kind.capitalize()
    tool = {"tool": enum(*tools)}
    created = obj({"task_id": string()}, ["task_id"])
    return [
        Operation(
            "POST",
            f"/api/tasks/{kind}/{{tool}}",
            f"picwishCreate{title}",
            f"Create a {kind} task (PicWish format)",
            PICWISH,
            {
                "200": json_response(
                    "The task id; with sync=1 the task object (finished, or as it is when the wait ends).",
                    any_of(
                        obj(
                            {"status": const(200), "message": const("success"), "data": created},
                            ["status", "message", "data"],
                        ),
                        ref("PicWishEnvelope"),
                    ),
                )
            },
            Declared({MULTIPART: PICWISH_FORM, FORM: PICWISH_PLAIN, JSON: PICWISH_PLAIN}),
            links={
                "query": link(
                    f"picwishQuery{title}",
                    "The task, as it advances.",
                    tool="$request.path.tool",
                    task_id="$response.body#/data/task_id",
                )
            },
            path_schemas=tool,
            description="Each tool routes the model picwish/<tool>.",
        ),
        Operation(
            "GET",
            f"/api/tasks/{kind}/{{tool}}/{{task_id}}",
            f"picwishQuery{title}",
            f"One {kind} task (PicWish format)",
            PICWISH,
            {"200": json_response("The task.", ref("PicWishEnvelope"))},
            path_schemas=tool,
        ),
    ]


def _vidu_links() -> dict[str, Schema]:
    return {"query": link("viduCreations", "The task, as it advances.", task_id="$response.body#/task_id")}


def operations() -> list[Operation]:
    creation = {"200": json_response("The task as created.", ref("ViduCreation"))}
    return [
        Operation(
            "POST",
            "/ent/v2/text2audio",
            "viduText2Audio",
            "Sound effect from text (Vidu format)",
            VIDU,
            creation,
            declared_json(TEXT2AUDIO, {"model": "audio1.0", "prompt": "rain on a tin roof", "duration": 5}),
            links=_vidu_links(),
        ),
        Operation(
            "POST",
            "/ent/v2/lip-sync",
            "viduLipSync",
            "Lip sync (Vidu format)",
            VIDU,
            creation,
            declared_json(LIP_SYNC),
            links=_vidu_links(),
        ),
        Operation(
            "GET",
            "/ent/v2/tasks/{task_id}/creations",
            "viduCreations",
            "One Vidu task",
            VIDU,
            {"200": json_response("The task (also the body of its callbacks).", ref("ViduTask"))},
        ),
        *_picwish("visual", picwish.TOOLS["visual"]),
        *_picwish("document", picwish.TOOLS["document"]),
    ]
