"""`fish` protocol: Fish Audio's `POST {base}/v1/tts` (JSON in, audio streamed back, the voice
model in a `model` header) and `POST {base}/v1/asr` (multipart `audio`)."""

from __future__ import annotations

import orjson

from unigate.providers.base import MediaCall, Reply, Target
from unigate.providers.body_stream import relay_bytes
from unigate.providers.form_body import FormBody
from unigate.providers.http import raise_for_answer, read_all
from unigate.providers.media.bearer import BearerProvider
from unigate.providers.upstream_status import Said, json_body

PROVIDER_TYPE = "fish"


class FishProvider(BearerProvider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset({"fish.tts", "fish.asr"})
    default_base_url = "https://api.fish.audio"

    async def media(self, call: MediaCall, target: Target) -> Reply:
        if call.op == "fish.tts":
            body = call.raw or orjson.dumps(call.payload)
            resp = await self.http.post("/v1/tts", body, target.timeouts, {"model": target.upstream_model})
        elif call.op == "fish.asr" and call.form is not None:
            form = FormBody(call.form)
            resp = await self.http.post("/v1/asr", form, target.timeouts)
        else:
            return await super().media(call, target)
        if resp.status >= 400:
            await raise_for_answer(resp, _said, "Fish Audio")
        content_type = resp.headers.get("Content-Type", "application/octet-stream").encode("latin-1")
        if call.op == "fish.tts":
            return Reply(content_type=content_type, stream=relay_bytes(resp), close=resp.close)
        return Reply(content_type=content_type, body=await read_all(resp))


def _said(data: bytes) -> Said:
    """Fish Audio's errors: `{"status", "message"}`."""
    error = json_body(data)
    message = error.get("message") if isinstance(error, dict) else None
    return Said(message if isinstance(message, str) else "")
