"""Vidu's enterprise paths for sound effects and lip sync: `POST /ent/v2/text2audio`,
`POST /ent/v2/lip-sync` and the task query `GET /ent/v2/tasks/{id}/creations`.

JSON in, JSON out; clients authenticate with `Authorization: Token <key>` (or Bearer) and
read errors as `{"code", "reason", "message", "metadata"}`. text2audio routes the body's
`model`; lip sync names no model, so it routes `media.lip_sync_model`. A `callback_url`
receives the task query's body, signed, on every change.
"""

from __future__ import annotations

import secrets
from typing import Any

import orjson

from unigate.api.serving import fields
from unigate.api.serving.task_family import TaskFamily, send_raw
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.providers.base import TaskSubmission
from unigate.records.vidu import vidu_creation

FAMILY = "vidu"
MAX_PROMPT = 1500
MAX_MODEL = 200
MAX_PAYLOAD = 1_048_576
MAX_URL = 4096  # http(s) links; data: URLs are bounded by the JSON body limit instead
MIN_TEXT, MAX_TEXT = 4, 2000
MAX_VOICE_ID = 200
SEED_MAX = 2**31 - 1


def _text(payload: dict[str, Any], name: str, max_len: int) -> str:
    """An optional string field, "" when absent, refused when too long."""
    value = fields.optional_text(payload, name) or ""
    if len(value) > max_len:
        raise InvalidRequest(
            f"'{name}' is too long: {len(value)} characters, at most {max_len}.",
            param=name,
            code="invalid_value",
        )
    return value


def _url(payload: dict[str, Any], name: str, required: bool = False) -> str:
    """An input file's URL: http(s), or a base64 data URL; "" when optional and absent."""
    value = (fields.required_text(payload, name) if required else fields.optional_text(payload, name)) or ""
    value = value.strip()
    if not value:
        return ""
    if value.startswith("data:"):
        return value
    if not value.startswith(("http://", "https://")) or len(value) > MAX_URL:
        raise InvalidRequest(
            f"'{name}' must be an http(s) URL of at most {MAX_URL} characters, or a base64 data URL.",
            param=name,
            code="invalid_value",
        )
    return value


def text2audio_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The validated text2audio body (without `callback_url`). A seed of 0 or none means a
    random one: it is picked here and stored, so the task shows the seed that was used."""
    model = fields.required_text(payload, "model", MAX_MODEL)
    prompt = fields.required_text(payload, "prompt", MAX_PROMPT)
    if not prompt.strip():
        raise InvalidRequest("'prompt' must not be blank.", param="prompt", code="invalid_value")
    duration = fields.number(payload, "duration", 2, 10)
    seed = fields.integer(payload, "seed", 0, SEED_MAX) or secrets.randbelow(SEED_MAX) + 1
    return {
        "model": model,
        "prompt": prompt,
        "duration": 10.0 if duration is None else duration,
        "seed": seed,
        "payload": _text(payload, "payload", MAX_PAYLOAD),
    }


def lip_sync_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The validated lip-sync body (without `callback_url`): the video, and one driving input,
    `audio_url` or `text` spoken by `voice_id`; like Vidu, the audio wins when both are set.
    Optional inputs that were not given are left out."""
    video_url = _url(payload, "video_url", required=True)
    audio_url = _url(payload, "audio_url")
    text = fields.optional_text(payload, "text") or ""
    if text and not MIN_TEXT <= len(text) <= MAX_TEXT:
        raise InvalidRequest(
            f"'text' must be {MIN_TEXT} to {MAX_TEXT} characters long, not {len(text)}.",
            param="text",
            code="invalid_value",
        )
    voice_id = _text(payload, "voice_id", MAX_VOICE_ID)
    if not audio_url and not text:
        raise InvalidRequest(
            "Give the speech to lip-sync: 'audio_url', or 'text' with a 'voice_id'.",
            param="audio_url",
            code="missing_required_parameter",
        )
    if not audio_url and not voice_id:
        raise InvalidRequest(
            "'voice_id' is required when 'text' drives the lip sync.",
            param="voice_id",
            code="missing_required_parameter",
        )
    speed = fields.number(payload, "speed", 0.5, 2)
    volume = fields.number(payload, "volume", 0, 10)
    found: dict[str, Any] = {
        "video_url": video_url,
        "audio_url": audio_url,
        "text": text,
        "voice_id": voice_id,
        "speed": 1.0 if speed is None else speed,
        "volume": 0.0 if volume is None else volume,
        "ref_photo_url": _url(payload, "ref_photo_url"),
        "payload": _text(payload, "payload", MAX_PAYLOAD),
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
        job_fields = text2audio_fields(payload)
        # A seed the gateway picked is not part of the request: a retry with the same
        # Idempotency-Key (which gets another random seed here) is the same request.
        picked = ("seed",) if payload.get("seed") in (None, "", 0) else ()
        await self._create(request, principal, payload, "text2audio", job_fields["model"], job_fields, picked)

    async def lip_sync(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.max_json)
        job_fields = lip_sync_fields(payload)
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
