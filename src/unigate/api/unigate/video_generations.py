"""The unified video API (`POST /v1/video/generations`, `GET /v1/video/generations/{task_id}`),
the vendor-neutral body new-api documents (`model`, `prompt`, `image`, `duration`, `width`,
`height`, `fps`, `seed`, `metadata` passed through to the upstream); it routes to any video
provider. Answers carry both `id` and `task_id`, `status`, `progress`, `url` once done and
`error{code,message}` on failure; errors use the OpenAI shape."""

from __future__ import annotations

from unigate.api.serving.task_family import TaskFamily, send_raw
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.gateway import Gateway
from unigate.providers.base import TaskSubmission
from unigate.video.validate import from_unified

FAMILY = "video"


class VideoGenerationsAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.family = TaskFamily(gw, FAMILY)

    async def create(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.gw.config.limits.max_json_body)
        parsed = from_unified(payload)
        entry = self.family.model(principal, parsed.model)
        job = TaskSubmission(FAMILY, parsed.action, parsed.model, parsed.fields, files=parsed.files)
        task = await self.family.submit(request, principal, job, entry)
        await send_raw(request, self.gw.tasks.rendered(task))

    async def fetch(self, request: Request, principal: Principal) -> None:
        await send_raw(request, await self.family.get_rendered(principal, request.params["task_id"]))


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = VideoGenerationsAPI(gw)
    return [
        Endpoint("POST", "/v1/video/generations", api.create, family="video"),
        Endpoint("GET", "/v1/video/generations/{task_id}", api.fetch, family="video"),
    ]
