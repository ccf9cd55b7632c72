"""OpenAI-style videos (`/v1/videos`), the vendor-neutral video API the `openai` SDK's
`videos` client speaks: create (JSON, or multipart with an `input_reference` image), retrieve,
list, delete, download content (video, thumbnail, spritesheet) and remix. Objects are the
SDK's `Video`; errors use the OpenAI shape."""

from __future__ import annotations

from unigate.api.serving import fields
from unigate.api.serving.pages import list_page
from unigate.api.serving.task_family import TaskFamily, send_raw
from unigate.api.serving.task_output import check_variant, send_output
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.edge.multipart import is_multipart, read_form
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import TaskRef, TaskSubmission
from unigate.shapes.declare import form_payload
from unigate.shapes.video import REMIX
from unigate.tasks.model import SUCCESS, TERMINAL
from unigate.tasks.service import Pinned
from unigate.video.validate import VideoRequest, from_openai

FAMILY = "openai-video"
NOT_FOUND = "No video with this id."
# The SDK's create_and_poll waits this long between retrieves when the server says so.
_POLL_AFTER = [(b"openai-poll-after-ms", b"1000")]


class VideosAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.family = TaskFamily(gw, FAMILY)

    @property
    def default_model(self) -> str:
        return self.gw.config.media.default_video_model  # read per call: a config reload may change it

    async def create(self, request: Request, principal: Principal) -> None:
        if is_multipart(request.header(b"content-type")):
            form = await read_form(request, self.gw.config.limits.max_image_upload)
            try:
                parsed = from_openai(form_payload(form), form, self.default_model)
            finally:
                form.close()
        else:
            _, payload = await request.json_object(self.gw.config.limits.max_json_body)
            parsed = from_openai(payload, None, self.default_model)
        await self._submit(request, principal, parsed)

    async def _submit(self, request: Request, principal: Principal, parsed: VideoRequest) -> None:
        entry = self.family.model(principal, parsed.model)
        job = TaskSubmission(FAMILY, parsed.action, parsed.model, parsed.fields, files=parsed.files)
        task = await self.family.submit(request, principal, job, entry)
        await send_raw(request, self.gw.tasks.rendered(task))

    async def retrieve(self, request: Request, principal: Principal) -> None:
        body = await self.family.get_rendered(principal, request.params["video_id"], NOT_FOUND)
        await send_raw(request, body, extra=_POLL_AFTER)

    async def list(self, request: Request, principal: Principal) -> None:
        query = request.query
        limit = fields.integer(query, "limit", 1, 100) or 20
        order = fields.choice(query, "order", ("asc", "desc"), "desc")
        page, more = await self.gw.tasks.store.page(
            principal.key_id,
            FAMILY,
            after=query.get("after") or None,
            limit=limit,
            newest_first=order == "desc",
        )
        records = [self.gw.tasks.render(t) for t in page]
        await send_json(request.send, 200, list_page(records, more))

    async def delete(self, request: Request, principal: Principal) -> None:
        task = await self.family.get(principal, request.params["video_id"], NOT_FOUND)
        if task.status not in TERMINAL:
            raise InvalidRequest(
                "The video is still being generated; only completed or failed videos can be deleted.",
                code="video_not_finished",
            )
        provider = self.gw.providers.get(task.provider)
        if provider is not None:
            await provider.delete_task(TaskRef(task.upstream_id, task.action), provider.timeouts())
        await self.gw.tasks.store.delete(task)
        await send_json(request.send, 200, {"id": task.id, "object": "video.deleted", "deleted": True})

    async def content(self, request: Request, principal: Principal) -> None:
        variant = check_variant(request.query.get("variant"))
        task = await self.family.get(principal, request.params["video_id"], NOT_FOUND)
        await send_output(request, self.gw, task, 0, variant)

    async def remix(self, request: Request, principal: Principal) -> None:
        """A new video from a finished one and a new prompt, made by the provider that made
        the original (it alone knows the source)."""
        _, payload = await request.json_object(self.gw.config.limits.max_json_body)
        prompt = REMIX.check(payload).prompt
        source = await self.family.get(principal, request.params["video_id"], NOT_FOUND)
        if source.status != SUCCESS:
            raise InvalidRequest("Only a completed video can be remixed.", code="video_not_completed")
        self.family.model(principal, source.model)  # the key may (still) use the model
        provider = self.gw.providers.get(source.provider)
        if provider is None:
            raise InvalidRequest(
                "The provider of this video is no longer configured.", code="video_unavailable"
            )
        target = self.gw.catalog.target_on(provider, source.model)
        job_fields = {
            **{k: v for k, v in source.request.items() if k not in ("native", "native_format", "image")},
            "prompt": prompt,
            "remix_of": source.upstream_id,
            "remixed_from": source.id,
        }
        job = TaskSubmission(FAMILY, "remix", source.model, job_fields)
        task = await self.family.submit(request, principal, job, Pinned(target))
        await send_raw(request, self.gw.tasks.rendered(task))


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = VideosAPI(gw)
    return [
        Endpoint("POST", "/v1/videos", api.create, family="video"),
        Endpoint("GET", "/v1/videos", api.list, family="video"),
        Endpoint("GET", "/v1/videos/{video_id}", api.retrieve, family="video"),
        Endpoint("DELETE", "/v1/videos/{video_id}", api.delete, family="video"),
        Endpoint("GET", "/v1/videos/{video_id}/content", api.content, family="video"),
        Endpoint("POST", "/v1/videos/{video_id}/remix", api.remix, family="video"),
    ]
