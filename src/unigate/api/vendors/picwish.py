"""PicWish's task paths for the visual and document tools: `POST /api/tasks/visual/{tool}`
(segmentation, inpaint, scale), `POST /api/tasks/document/{tool}` (ocr) and the query
`GET /api/tasks/{visual|document}/{tool}/{task_id}`.

A create is a form (multipart, or urlencoded / JSON when the image is a URL) with exactly one
of `image_file` and `image_url`, the tool's parameters, `sync` and `callback_url`, declared in
`shapes/picwish.py`; the tool's parameters' values are checked here, per tool. Each tool
routes the model `picwish/<tool>`. Answers are `{"status": 200, "message": "success",
"data"}`; `sync=1` waits for the task (30 s for visual tools, 120 s for OCR) and answers its
task object. Errors are `{"status", "message"}`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from unigate.api.serving.task_family import TaskFamily, send_raw
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, urlencoded
from unigate.edge.endpoints import Endpoint
from unigate.edge.media_types import IMAGE_CONTENT_TYPES, sniff_image
from unigate.edge.multipart import Form, UploadedFile, is_multipart, read_form
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway
from unigate.providers.base import InputFile, TaskSubmission
from unigate.records.picwish import picwish_envelope
from unigate.shapes.declare import form_payload
from unigate.shapes.picwish import FORM, MAX_URL, OCR_FORMATS, PLAIN, PicWishFields, PicWishForm
from unigate.tasks.model import Task

FAMILY = "picwish"
TOOLS = {"visual": ("segmentation", "inpaint", "scale"), "document": ("ocr",)}
SYNC_SECONDS = {"visual": 30.0, "document": 120.0}
SYNC_POLL = 0.25  # seconds between looks at the task while a sync create waits
MAX_RECTANGLES = 100
MAX_LANGUAGES = 10
_ENVELOPE_HEAD = b'{"status":200,"message":"success","data":'  # + task object + "}"


def _bad(name: str, message: str) -> InvalidRequest:
    return InvalidRequest(message, param=name, code="invalid_value")


def _option(payload: dict[str, Any], name: str, options: tuple[str, ...], default: str = "") -> str:
    """A parameter from a fixed set, as a string ("" when absent and no default)."""
    value = payload.get(name)
    text = "" if value is None or isinstance(value, bool) else str(value).strip()
    if not text:
        return default
    if text not in options:
        raise _bad(name, f"Invalid value for '{name}': expected one of {', '.join(options)}.")
    return text


def _bg_color(payload: dict[str, Any]) -> str:
    value = str(payload.get("bg_color") or "").strip().lstrip("#")
    if value and (len(value) not in (6, 8) or any(c not in "0123456789abcdefABCDEF" for c in value)):
        raise _bad("bg_color", "Invalid value for 'bg_color': expected a hex colour such as FFFFFF.")
    return value.upper()


def rectangles(raw: Any) -> str:
    """The inpaint rectangles as normalised JSON: a non-empty array of {x, y, width, height}
    whole numbers, x and y at least 0, width and height at least 1."""
    try:
        parsed = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
    except orjson.JSONDecodeError:
        raise _bad("rectangles", "'rectangles' is not valid JSON.") from None
    if not isinstance(parsed, list) or not 1 <= len(parsed) <= MAX_RECTANGLES:
        raise _bad("rectangles", f"'rectangles' must be a JSON array of 1 to {MAX_RECTANGLES} rectangles.")
    found = []
    for item in parsed:
        if not isinstance(item, dict):
            raise _bad("rectangles", "Each rectangle must be an object {x, y, width, height}.")
        box = {}
        for key, low in (("x", 0), ("y", 0), ("width", 1), ("height", 1)):
            value = item.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise _bad("rectangles", f"Each rectangle needs '{key}' as a whole number of at least {low}.")
            box[key] = value
        found.append(box)
    return orjson.dumps(found).decode()


def _languages(payload: dict[str, Any]) -> str:
    value = str(payload.get("language") or "")
    names = [part.strip() for part in value.split(",") if part.strip()]
    if len(names) > MAX_LANGUAGES or any(not n.replace("_", "").isalpha() or len(n) > 40 for n in names):
        raise _bad("language", f"'language' must be a comma list of at most {MAX_LANGUAGES} language names.")
    return ",".join(names)


def tool_params(tool: str, payload: dict[str, Any]) -> dict[str, str]:
    """The tool's parameters, checked, as strings; absent optional ones left out."""
    if tool == "segmentation":
        found = {
            "type": _option(payload, "type", ("person", "object", "stamp")),
            "output_type": _option(payload, "output_type", ("1", "2", "3")),
            "crop": _option(payload, "crop", ("0", "1")),
            "format": _option(payload, "format", ("png", "jpg")),
            "bg_color": _bg_color(payload),
        }
    elif tool == "inpaint":
        raw = payload.get("rectangles")
        found = {"rectangles": rectangles(raw) if raw not in (None, "") else ""}
        found["mask_url"] = _image_url(payload, "mask_url")
    elif tool == "scale":
        found = {
            "scale_factor": _option(payload, "scale_factor", ("1", "2", "4"), "2"),
            "type": _option(payload, "type", ("clean", "face")),
        }
    else:  # ocr
        found = {"format": _option(payload, "format", OCR_FORMATS, "txt"), "language": _languages(payload)}
    return {name: value for name, value in found.items() if value}


def _image_url(payload: dict[str, Any], name: str) -> str:
    value = payload.get(name)
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not value.strip().startswith(("http://", "https://")):
        raise _bad(name, f"'{name}' must be an http(s) URL.")
    if len(value) > MAX_URL:
        raise _bad(name, f"'{name}' is longer than {MAX_URL} characters.")
    return value.strip()


def _image_file(upload: UploadedFile) -> InputFile:
    kind = sniff_image(upload.head()) if upload.size else None
    if kind not in IMAGE_CONTENT_TYPES:
        raise InvalidRequest(
            f"The file '{upload.name}' is not a PNG, JPEG or WebP image.",
            param=upload.name,
            code="invalid_image_format",
        )
    return InputFile(upload.read(), upload.filename or f"{upload.name}.{kind}", IMAGE_CONTENT_TYPES[kind])


def build_job(kind: str, tool: str, payload: dict[str, Any], sent: PicWishFields) -> TaskSubmission:
    """The job for one checked create (`shapes/picwish.py`: exactly one image source): the
    tool's checked parameters, and for inpaint exactly one of `mask_file`, `mask_url` and
    `rectangles`."""
    upload = sent.image_file.file if isinstance(sent, PicWishForm) and sent.image_file else None
    job_fields: dict[str, Any] = tool_params(tool, payload)
    files: dict[str, InputFile] = {}
    if upload is not None:
        files["image_file"] = _image_file(upload)
    else:
        job_fields["image_url"] = (sent.image_url or "").strip()
    if tool == "inpaint":
        mask = sent.mask_file.file if isinstance(sent, PicWishForm) and sent.mask_file else None
        if mask is not None:
            files["mask_file"] = _image_file(mask)
        given = [name for name in ("mask_url", "rectangles") if name in job_fields]
        if len(given) + (mask is not None) != 1:
            raise InvalidRequest(
                "inpaint takes exactly one of 'mask_file', 'mask_url' and 'rectangles'.",
                param="rectangles",
                code="invalid_request",
            )
    return TaskSubmission(FAMILY, f"{kind}/{tool}", f"picwish/{tool}", job_fields, files=files)


class PicWishAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.family = TaskFamily(gw, FAMILY)
        self.max_upload = gw.config.limits.max_image_upload
        self.max_json = gw.config.limits.max_json_body

    async def create_visual(self, request: Request, principal: Principal) -> None:
        await self._create(request, principal, "visual")

    async def create_document(self, request: Request, principal: Principal) -> None:
        await self._create(request, principal, "document")

    async def query_visual(self, request: Request, principal: Principal) -> None:
        await self._query(request, principal, "visual")

    async def query_document(self, request: Request, principal: Principal) -> None:
        await self._query(request, principal, "document")

    def _tool(self, request: Request, kind: str) -> str:
        tool = request.params["tool"]
        if tool not in TOOLS[kind]:
            raise NotFound(
                f"No {kind} tool '{tool}'; the gateway offers {', '.join(TOOLS[kind])}.", code="unknown_tool"
            )
        return tool

    async def _create(self, request: Request, principal: Principal, kind: str) -> None:
        tool = self._tool(request, kind)
        form: Form | None = None
        try:
            sent: PicWishFields
            if is_multipart(request.header(b"content-type")):
                form = await read_form(request, self.max_upload)
                payload = form_payload(form)
                sent = FORM.check_form(form, payload)
            else:
                payload = await self._plain_body(request)
                sent = PLAIN.check(payload)
            job = build_job(kind, tool, payload, sent)
            sync = sent.sync in (1, "1")
            callback = self.family.callback(payload)
            entry = self.family.model(principal, job.model)
            task = await self.family.submit(request, principal, job, entry, callback=callback)
        finally:
            if form is not None:
                form.close()
        if not sync:
            await send_raw(request, orjson.dumps(picwish_envelope({"task_id": task.id})))
            return
        task = await self._wait(principal, task, SYNC_SECONDS[kind])
        await send_raw(request, _ENVELOPE_HEAD + self.gw.tasks.rendered(task) + b"}")

    async def _plain_body(self, request: Request) -> dict[str, Any]:
        """A form without files: urlencoded, or a JSON object."""
        content_type = (request.header(b"content-type") or b"").split(b";", 1)[0].strip().lower()
        if content_type == b"application/json":
            return (await request.json_object(self.max_json))[1]
        if content_type == b"application/x-www-form-urlencoded":
            return dict(urlencoded(await request.body(self.max_json), "form"))
        raise InvalidRequest(
            "Send the task as multipart/form-data (an 'image_file' upload or an 'image_url').",
            code="invalid_content_type",
        )

    async def _wait(self, principal: Principal, task: Task, seconds: float) -> Task:
        """The task once finished, or as it is when `seconds` have passed. Reads the store,
        so it sees the task finish whichever worker polls it."""
        deadline = time.monotonic() + seconds
        while not task.terminal and time.monotonic() < deadline:
            await asyncio.sleep(SYNC_POLL)
            found = await self.gw.tasks.fetch(principal, task.id, FAMILY)
            if found is None:
                break
            task = found
        return task

    async def _query(self, request: Request, principal: Principal, kind: str) -> None:
        tool = self._tool(request, kind)
        task = await self.family.get(principal, request.params["task_id"])
        if task.action != f"{kind}/{tool}":
            raise NotFound("No task with this id.", code="task_not_found")
        await send_raw(request, _ENVELOPE_HEAD + self.gw.tasks.rendered(task) + b"}")


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = PicWishAPI(gw)
    return [
        Endpoint("POST", "/api/tasks/visual/{tool}", api.create_visual, family="visual", style="picwish"),
        Endpoint("POST", "/api/tasks/document/{tool}", api.create_document, family="visual", style="picwish"),
        Endpoint(
            "GET", "/api/tasks/visual/{tool}/{task_id}", api.query_visual, family="visual", style="picwish"
        ),
        Endpoint(
            "GET",
            "/api/tasks/document/{tool}/{task_id}",
            api.query_document,
            family="visual",
            style="picwish",
        ),
    ]
