"""OpenAI's Files API (`/v1/files`), as the `openai` SDK's `files` client speaks it: upload
(multipart, streamed to the file store), list, retrieve, download content, delete. Files are
the key's own: another key's file id is a 404, exactly like an unknown one. Objects are the
SDK's `FileObject`; errors use the OpenAI shape."""

from __future__ import annotations

import asyncio
import logging

from unigate.api.serving import fields
from unigate.api.serving.media import NOSNIFF
from unigate.api.serving.pages import list_page
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import GatewayError, InvalidRequest, PayloadTooLarge, StorageUnavailable
from unigate.files.model import StoredFile
from unigate.files.service import FileService, Staged, check_filename
from unigate.files.upload import FILE_FIELD, StreamedUpload
from unigate.gateway import Gateway
from unigate.shapes.files import UPLOAD, FileUpload, form_fields

log = logging.getLogger("unigate.files")

MAX_LIST = 10_000
FILE_ID = "[^/:]+"
_OCTETS = b"application/octet-stream"
_JSONL = b"application/jsonl"


class FilesAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw

    @property
    def service(self) -> FileService:
        return self.gw.files

    async def create(self, request: Request, principal: Principal) -> None:
        max_bytes = self.gw.config.files.max_bytes  # read per call: a reload may change it
        upload = StreamedUpload(request, max_bytes)
        staged: Staged | None = None
        try:
            if upload.too_large():
                raise PayloadTooLarge(f"The upload exceeds the limit of {max_bytes} bytes (files.max_bytes).")
            await self.service.precheck(principal.key_id)
            if not await upload.begin():
                raise _missing_file()
            check_filename(upload.filename)
            if "purpose" in upload.fields:  # sent before the file (the SDKs do): refused before it is read
                _form({"purpose": upload.fields["purpose"]})
            staged = await self.service.stage(principal.key_id, upload.chunks())
            await upload.finish()
            form = _form(upload.fields)
        except GatewayError:
            if staged is not None:
                await self.service.discard(staged)
            await upload.drain()
            raise
        except BaseException:
            if staged is not None:
                await asyncio.shield(self.service.discard(staged))
            raise
        expires_at = None
        if form.expires_after is not None:
            expires_at = int(staged.created) + form.expires_after.seconds
        stored = await self.service.commit(staged, form.purpose, upload.filename, expires_at)
        await send_json(request.send, 200, stored.public())

    async def list(self, request: Request, principal: Principal) -> None:
        query = request.query
        limit = fields.integer(query, "limit", 1, MAX_LIST) or MAX_LIST
        order = fields.choice(query, "order", ("asc", "desc"), "desc")
        purpose = query.get("purpose") or None
        page = await self.service.page(
            principal.key_id,
            purpose=purpose,
            after=query.get("after") or None,
            limit=limit,
            newest_first=order == "desc",
        )
        data = [f.public() for f in page.files]
        await send_json(request.send, 200, list_page(data, page.has_more))

    async def retrieve(self, request: Request, principal: Principal) -> None:
        found = await self.service.get(principal.key_id, request.params["file_id"])
        await send_json(request.send, 200, found.public())

    async def delete(self, request: Request, principal: Principal) -> None:
        file_id = request.params["file_id"]
        await self.service.delete(principal.key_id, file_id)
        await send_json(request.send, 200, {"id": file_id, "object": "file", "deleted": True})

    async def content(self, request: Request, principal: Principal) -> None:
        found = await self.service.get(principal.key_id, request.params["file_id"])
        await _send_content(request, self.service, found)


async def _send_content(request: Request, service: FileService, found: StoredFile) -> None:
    """The stored bytes exactly, streamed; a batch file (JSON Lines) says so in its type."""
    opened = await service.open(found)
    content_type = _JSONL if found.purpose in ("batch", "batch_output") else _OCTETS
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(opened.size).encode()),
        NOSNIFF,
        (b"x-request-id", request.request_id.encode()),
    ]
    await request.send({"type": "http.response.start", "status": 200, "headers": headers})
    try:
        await request.send({"type": "http.response.body", "body": opened.head, "more_body": True})
        async for chunk in opened.rest:
            await request.send({"type": "http.response.body", "body": chunk, "more_body": True})
        await request.send({"type": "http.response.body", "body": b""})
    except StorageUnavailable:
        # Headers are out: the response ends short, which the client sees as a failed download.
        log.warning("file download cut short on request %s: storage unavailable", request.request_id)
    finally:
        await opened.close()


def _form(sent: dict[str, str]) -> FileUpload:
    """The form's text fields, checked (an empty field is its default)."""
    return UPLOAD.check(form_fields(sent))


def _missing_file() -> InvalidRequest:
    return InvalidRequest(
        f"The upload has no file: send it as the multipart part '{FILE_FIELD}' with a filename.",
        param=FILE_FIELD,
        code="missing_required_parameter",
    )


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = FilesAPI(gw)
    # A file id never holds `:`, so `/v1/files/{name}:download` stays the Gemini API's (api/gemini/veo.py).
    return [
        Endpoint("POST", "/v1/files", api.create),
        Endpoint("GET", "/v1/files", api.list),
        Endpoint("GET", "/v1/files/{file_id}", api.retrieve, param=FILE_ID),
        Endpoint("DELETE", "/v1/files/{file_id}", api.delete, param=FILE_ID),
        Endpoint("GET", "/v1/files/{file_id}/content", api.content, param=FILE_ID),
    ]
