"""A fake PicWish task API on 127.0.0.1 (gateway `base_url` = `root`; the paths carry /api),
built on fake_tasks (timelines, recording, /files/ serving).

Auth: `X-API-KEY: <api_key>`; anything else is HTTP 401 {"status": 401, "message"}.

  POST /api/tasks/visual/{tool}     tools: segmentation, clothing-segmentation,
                                    self-face-cutout, inpaint, scale, scale-pro, colorization,
                                    correction, idphoto, imgcompress, external/watermark-remove
  POST /api/tasks/document/{tool}   tools: ocr, conversion, pdfedit
    A form (multipart, or urlencoded) or a JSON object with exactly one of `image_file` (an
    uploaded file) and `image_url`, `sync` (0 default | 1), `callback_url` and the tool's
    parameters, of which these are checked: segmentation `output_type` (1 image + mask, 2 image
    (default), 3 mask only) and `format` (png | jpg), inpaint needs `mask_file`, `mask_url`
    or `rectangles`, ocr `format` (txt | pdf | docx | xlsx | pptx).
    -> {"status": 200, "message": "success", "data": {"task_id"}}; with sync=1 the job jumps
       to the end of its timeline at once and `data` is the task object below (a stalled one
       answers state 4, a manual one its current stage).
  GET /api/tasks/{visual|document}/{tool}/{task_id}
    -> {"status": 200, "message": "success", "data": {"task_id", "state", "state_detail",
       "progress", "return_type": 1, "image" | "mask" | "file", "created_at", "processed_at",
       "completed_at"}} (unix seconds, null until they happen)
Generic stages show as: queued `queued_state` (0 by default; 2 or 3 also mean waiting),
running 4 (progress 50), success 1 (progress 100, "Complete"), failed `fail_state` (-1 by
default; -8 is PicWish's timeout) with state_detail = `fail_reason`, unknown `UNKNOWN_STATE`
(a number PicWish never documents). Results: visual tools `image`, a PNG at
/files/<task>.png (a JPEG at /files/<task>.jpg for segmentation with format=jpg), plus
`mask` (/files/<task>-mask.png) for segmentation output_type 1, only `mask` for 3; document
tools `file`, a text file at /files/<task>.txt whatever `format` asked.

Errors are {"status": <HTTP status>, "message"} under that status: bad input 400, unknown
tool or task 404, `submit_reject` 400, `submit_status`/`poll_status` as given.

Not modelled: return_type 2/3 (base64 / binary results: URLs are always returned),
callbacks, tool-specific outputs beyond image/mask/file (class_masks, clothes_masks zip,
face boxes ...), the 15 MB / pixel limits and their states (-5, -7), download failures of
image_url (-3), result expiry after an hour, rate limiting, and what the result looks like
(always the same small PNG or text).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.support import task_fixtures
from tests.support.fake_tasks import (
    FAILED,
    QUEUED,
    RUNNING,
    SUCCESS,
    UNKNOWN,
    BodyError,
    Call,
    FakeTaskUpstream,
    Job,
    json_response,
)

TOOLS: dict[str, frozenset[str]] = {
    "visual": frozenset(
        {
            "segmentation",
            "clothing-segmentation",
            "self-face-cutout",
            "inpaint",
            "scale",
            "scale-pro",
            "colorization",
            "correction",
            "idphoto",
            "imgcompress",
            "external/watermark-remove",
        }
    ),
    "document": frozenset({"ocr", "conversion", "pdfedit"}),
}
UNKNOWN_STATE = 5
FAIL_DETAIL = "Image processing failed (fake)."
_OCR_FORMATS = ("txt", "pdf", "docx", "xlsx", "pptx")
_DETAILS = {QUEUED: "Queued", RUNNING: "Processing", SUCCESS: "Complete", UNKNOWN: "Uploading"}
_PROGRESS = {QUEUED: 0, RUNNING: 50, UNKNOWN: 80, SUCCESS: 100, FAILED: 0}


@dataclass
class FakePicWish(FakeTaskUpstream):
    api_key: str = "picwish-key"
    queued_state: int = 0
    fail_state: int = -1

    @property
    def base_url(self) -> str:
        return self.root

    def _vendor_routes(self, app: web.Application) -> None:
        app.router.add_post("/api/tasks/{family:visual|document}/{tool:.+}", self._submit)
        app.router.add_get("/api/tasks/{family:visual|document}/{rest:.+}", self._query)

    def _refused(self, request: web.Request, call: Call) -> web.Response | None:
        if request.headers.get("X-API-KEY") == self.api_key:
            return None
        self._note(
            call, note="picwish auth: " + ("missing" if "X-API-KEY" not in request.headers else "wrong key")
        )
        return _error(401, "Unauthorized: invalid or missing X-API-KEY")

    async def _submit(self, request: web.Request) -> web.Response:
        family, tool = request.match_info["family"], request.match_info["tool"]
        try:
            call = await self._read_body(request)
        except BodyError as exc:
            return self._refused(request, self._call(request)) or _error(400, f"Bad request body: {exc}")
        denied = self._refused(request, call)
        if denied is not None:
            return denied
        if tool not in TOOLS[family]:
            return _error(404, f"Unknown tool {family}/{tool}")
        if call.json is not None and not isinstance(call.json, dict):
            return _error(400, "The body must be a JSON object")
        status, reject = self._gate("submit")
        if status != 200:
            return _error(status, "Service failure (fake)")
        if reject:
            return _error(400, "The request was rejected (fake)")
        params = call.params()
        problem = _validate(tool, params, call)
        if problem is not None:
            return _error(400, problem)
        job = self._new_job(call, f"{family}/{tool}", params, job_id=str(uuid.uuid4()))
        if str(params.get("sync", "0")) == "1":
            stage = self._peek(job) if job.manual else self._finish_now(job)
            return _ok(self._render(job, stage))
        return _ok({"task_id": job.id})

    async def _query(self, request: web.Request) -> web.Response:
        family = request.match_info["family"]
        tool, _, task_id = request.match_info["rest"].rpartition("/")
        call = self._poll_call(request, task_id)
        await self._hold()
        denied = self._refused(request, call)
        if denied is not None:
            return denied
        status, _ = self._gate("poll")
        if status != 200:
            return _error(status, "Service failure (fake)")
        job = self._find(task_id)
        if job is None or job.kind != f"{family}/{tool}":
            return _error(404, "Task not found")
        stage = self._step(call, job)
        return _ok(self._render(job, stage))

    def _render(self, job: Job, stage: str) -> dict[str, Any]:
        states = {
            QUEUED: self.queued_state,
            RUNNING: 4,
            SUCCESS: 1,
            FAILED: self.fail_state,
            UNKNOWN: UNKNOWN_STATE,
        }
        data: dict[str, Any] = {
            "task_id": job.id,
            "state": states[stage],
            "state_detail": self._failure(FAIL_DETAIL) if stage == FAILED else _DETAILS[stage],
            "progress": _PROGRESS[stage],
            "return_type": 1,
        }
        if stage == SUCCESS:
            data.update(self._results(job))
        data["created_at"] = int(job.created)
        data["processed_at"] = int(job.started) if job.started else None
        data["completed_at"] = int(job.finished) if job.finished else None
        return data

    def _results(self, job: Job) -> dict[str, str]:
        family, _, tool = job.kind.partition("/")
        if family == "document":
            return {
                "file": self._publish(
                    f"{job.id}.txt", task_fixtures.CONTENT_TYPES["txt"], task_fixtures.text_file(), job.id
                )
            }
        out: dict[str, str] = {}
        output_type = str(job.params.get("output_type", "2"))
        if tool != "segmentation" or output_type in ("1", "2"):
            if tool == "segmentation" and str(job.params.get("format", "png")) == "jpg":
                out["image"] = self._publish(
                    f"{job.id}.jpg", "image/jpeg", task_fixtures.jpeg_cover(), job.id
                )
            else:
                out["image"] = self._publish(f"{job.id}.png", "image/png", task_fixtures.png(), job.id)
        if tool == "segmentation" and output_type in ("1", "3"):
            out["mask"] = self._publish(f"{job.id}-mask.png", "image/png", task_fixtures.mask_png(), job.id)
        return out


def _validate(tool: str, params: dict[str, Any], call: Call) -> str | None:
    """Why PicWish would refuse this create, or None."""
    has_file = bool(call.files.get("image_file"))
    has_url = bool(str(params.get("image_url") or "").strip())
    if has_file and has_url:
        return "Only one of image_file and image_url may be given"
    if not has_file and not has_url:
        return "image_file or image_url is required"
    if str(params.get("sync", "0")) not in ("0", "1"):
        return "sync must be 0 or 1"
    if tool == "segmentation":
        if str(params.get("output_type", "2")) not in ("1", "2", "3"):
            return "output_type must be 1, 2 or 3"
        if str(params.get("format", "png")) not in ("png", "jpg"):
            return "format must be png or jpg"
    if tool == "inpaint" and not (
        call.files.get("mask_file") or params.get("mask_url") or params.get("rectangles")
    ):
        return "inpaint needs mask_file, mask_url or rectangles"
    if tool == "ocr" and str(params.get("format", "txt")) not in _OCR_FORMATS:
        return f"format must be one of {', '.join(_OCR_FORMATS)}"
    return None


def _ok(data: dict[str, Any]) -> web.Response:
    return json_response(200, {"status": 200, "message": "success", "data": data})


def _error(status: int, message: str) -> web.Response:
    return json_response(status, {"status": status, "message": message})
