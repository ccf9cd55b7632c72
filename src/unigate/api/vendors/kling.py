"""Kling's native video paths under `/kling`: `POST /kling/v1/videos/{text2video,image2video}`
and `GET /kling/v1/videos/{action}/{task_id}` (the id, or the client's `external_task_id`).
Answers use Kling's envelope `{"code": 0, "message", "request_id", "data"}` with times in
milliseconds; errors its `{"code": <service code>, "message", "request_id"}`. `model_name`
is the model id (Kling's `kling-v1` when omitted), routed like any other model."""

from __future__ import annotations

import orjson

from unigate.api.serving.task_family import TaskFamily, send_raw
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway
from unigate.providers.base import TaskSubmission
from unigate.tasks.model import Task
from unigate.video.validate import from_kling

FAMILY = "kling"
ACTIONS = ("text2video", "image2video")


class KlingAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.family = TaskFamily(gw, FAMILY)

    async def text2video(self, request: Request, principal: Principal) -> None:
        await self._create(request, principal, "text2video")

    async def image2video(self, request: Request, principal: Principal) -> None:
        await self._create(request, principal, "image2video")

    async def _create(self, request: Request, principal: Principal, action: str) -> None:
        _, payload = await request.json_object(self.gw.config.limits.max_json_body)
        parsed = from_kling(payload, action)
        callback = self.family.callback(payload)
        external = str(parsed.fields.get("external_task_id") or "")

        async def unique_external_id() -> None:
            # After the Idempotency-Key check: a retry of the submit that used this id is
            # answered with its task, not refused as a duplicate.
            if external and await self.gw.tasks.store.by_external_id(principal.key_id, FAMILY, external):
                raise InvalidRequest(
                    "A task with this external_task_id exists already.",
                    param="external_task_id",
                    code="duplicate_task",
                )

        entry = self.family.model(principal, parsed.model)
        job = TaskSubmission(FAMILY, action, parsed.model, parsed.fields)
        task = await self.family.submit(
            request,
            principal,
            job,
            entry,
            callback=callback,
            external_id=external,
            precheck=unique_external_id,
        )
        await self._send(request, task)

    async def query(self, request: Request, principal: Principal) -> None:
        action, task_id = request.params["action"], request.params["task_id"]
        if action not in ACTIONS:
            raise NotFound(f"No Kling endpoint '{action}'.", code="unknown_url")
        task = await self.gw.tasks.fetch(principal, task_id, FAMILY)
        if task is None:
            task = await self.gw.tasks.store.by_external_id(principal.key_id, FAMILY, task_id)
        if task is None or task.action != action:
            raise NotFound("No task with this id.", code="task_not_found")
        await self._send(request, task)

    async def _send(self, request: Request, task: Task) -> None:
        head = b'{"code":0,"message":"SUCCEED","request_id":' + orjson.dumps(request.request_id) + b',"data":'
        await send_raw(request, head + self.gw.tasks.rendered(task) + b"}")


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = KlingAPI(gw)
    return [
        Endpoint("POST", "/kling/v1/videos/text2video", api.text2video, family="video", style="kling"),
        Endpoint("POST", "/kling/v1/videos/image2video", api.image2video, family="video", style="kling"),
        Endpoint("GET", "/kling/v1/videos/{action}/{task_id}", api.query, family="video", style="kling"),
    ]
