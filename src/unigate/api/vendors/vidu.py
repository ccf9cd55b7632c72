"""Vidu's enterprise paths for sound effects and lip sync: `POST /ent/v2/text2audio`,
`POST /ent/v2/lip-sync` and the task query `GET /ent/v2/tasks/{id}/creations`.

JSON in, JSON out; clients authenticate with `Authorization: Token <key>` (or Bearer) and
read errors as `{"code", "reason", "message", "metadata"}`. text2audio routes the body's
`model`; lip sync names no model, so it routes `media.lip_sync_model`. A `callback_url`
receives the task query's body, signed, on every change. Bodies are declared in
`shapes/vidu.py`.
"""

from __future__ import annotations

import secrets
from typing import Any

import orjson

from unigate.api.serving.task_family import TaskFamily, send_raw
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.gateway import Gateway
from unigate.providers.base import TaskSubmission
from unigate.records.vidu import vidu_creation
from unigate.shapes.vidu import LIP_SYNC, SEED_MAX, TEXT2AUDIO, ViduLipSyncRequest, ViduText2AudioRequest

FAMILY = "vidu"


def text2audio_fields(sent: ViduText2AudioRequest) -> dict[str, Any]:
    """The checked text2audio body (without `callback_url`). A seed of 0 or none means a random
    one: it is picked here and stored, so the task shows the seed that was used."""
    return {
        "model": sent.model,
        "prompt": sent.prompt,
        "duration": 10.0 if sent.duration is None else sent.duration,
        "seed": sent.seed or secrets.randbelow(SEED_MAX) + 1,
        "payload": sent.payload or "",
    }


def lip_sync_fields(sent: ViduLipSyncRequest) -> dict[str, Any]:
    """The checked lip-sync body (without `callback_url`): the video, and one driving input,
    `audio_url` or `text` spoken by `voice_id`; like Vidu, the audio wins when both are set.
    Optional inputs that were not given are left out."""
    found: dict[str, Any] = {
        "video_url": sent.video_url.strip(),
        "audio_url": (sent.audio_url or "").strip(),
        "text": sent.text or "",
        "voice_id": sent.voice_id or "",
        "speed": 1.0 if sent.speed is None else sent.speed,
        "volume": 0.0 if sent.volume is None else sent.volume,
        "ref_photo_url": (sent.ref_photo_url or "").strip(),
        "payload": sent.payload or "",
    }
    return {name: value for name, value in found.items() if value != "" or name == "payload"}


class ViduAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.family = TaskFamily(gw, FAMILY)
        self.max_json = gw.config.limits.max_json_body

    @property
    def lip_sync_model(self) -> str:
        return self.gw.config.media.lip_sync_model  # read per call: a config reload may change it

    async def text2audio(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.max_json)
        job_fields = text2audio_fields(TEXT2AUDIO.check(payload))
        # A seed the gateway picked is not part of the request: a retry with the same
        # Idempotency-Key (which gets another random seed here) is the same request.
        picked = ("seed",) if payload.get("seed") in (None, "", 0) else ()
        await self._create(request, principal, payload, "text2audio", job_fields["model"], job_fields, picked)

    async def lip_sync(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.max_json)
        job_fields = lip_sync_fields(LIP_SYNC.check(payload))
        await self._create(request, principal, payload, "lip-sync", self.lip_sync_model, job_fields)

    async def _create(
        self,
        request: Request,
        principal: Principal,
        payload: dict[str, Any],
        action: str,
        model: str,
        job_fields: dict[str, Any],
        picked: tuple[str, ...] = (),
    ) -> None:
        callback = self.family.callback(payload)
        entry = self.family.model(principal, model)
        job = TaskSubmission(FAMILY, action, model, job_fields)
        task = await self.family.submit(request, principal, job, entry, callback=callback, picked=picked)
        await send_raw(request, orjson.dumps(vidu_creation(task)))

    async def creations(self, request: Request, principal: Principal) -> None:
        body = await self.family.get_rendered(principal, request.params["task_id"], "No task with this id.")
        await send_raw(request, body)


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = ViduAPI(gw)
    return [
        Endpoint("POST", "/ent/v2/text2audio", api.text2audio, family="audio", style="vidu"),
        Endpoint("POST", "/ent/v2/lip-sync", api.lip_sync, family="audio", style="vidu"),
        Endpoint("GET", "/ent/v2/tasks/{task_id}/creations", api.creations, family="audio", style="vidu"),
    ]
