"""Veo through the Gemini API's paths: `POST /v1beta/models/{model}:predictLongRunning`
answers a long-running operation `{"name": "models/{model}/operations/{id}"}`;
`GET /v1beta/models/{model}/operations/{id}` answers it again until `done`; the video `uri`s
it then lists download from `GET /v1beta/files/{name}:download` with the caller's key
(`x-goog-api-key` or `?key=`). This is the loop google-genai's `models.generate_videos` and
`operations.get` run. Errors use Google's shape."""

from __future__ import annotations

from unigate.api.serving.task_family import TaskFamily, send_raw
from unigate.api.serving.task_output import send_output
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import NotFound
from unigate.gateway import Gateway
from unigate.providers.base import TaskSubmission
from unigate.records.veo import operation_name, parse_file_name
from unigate.video.validate import from_veo

FAMILY = "veo"


class VeoAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.family = TaskFamily(gw, FAMILY)

    async def create(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.gw.config.limits.max_json_body)
        model = request.params["model"]
        parsed = from_veo(payload, model)
        entry = self.family.model(principal, model)
        job = TaskSubmission(FAMILY, parsed.action, model, parsed.fields)
        task = await self.family.submit(request, principal, job, entry)
        await send_json(request.send, 200, {"name": operation_name(task)})

    async def operation(self, request: Request, principal: Principal) -> None:
        task = await self.family.get(principal, request.params["operation"], "No operation with this name.")
        if task.model != request.params["model"]:
            raise NotFound("No operation with this name.", code="task_not_found")
        await send_raw(request, self.gw.tasks.rendered(task))

    async def download(self, request: Request, principal: Principal) -> None:
        parsed = parse_file_name(request.params["name"])
        if parsed is None:
            raise NotFound("No file with this name.", code="file_not_found")
        task = await self.family.get(principal, parsed[0], "No file with this name.")
        await send_output(request, self.gw, task, parsed[1], "video")


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = VeoAPI(gw)
    out = []
    for version in ("v1beta", "v1"):
        models = f"/{version}/models/{{model}}"
        out += [
            Endpoint("POST", models + ":predictLongRunning", api.create, family="video", style="gemini"),
            Endpoint(
                "GET", models + "/operations/{operation}", api.operation, family="video", style="gemini"
            ),
            Endpoint(
                "GET", f"/{version}/files/{{name}}:download", api.download, family="video", style="gemini"
            ),
        ]
    return out
