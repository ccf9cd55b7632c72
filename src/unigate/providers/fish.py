"""`fish` protocol: Fish Audio's `POST {base}/v1/tts` (JSON in, audio streamed back, the voice
model in a `model` header) and `POST {base}/v1/asr` (multipart `audio`)."""

from __future__ import annotations

import orjson

from unigate.config import ProviderConfig
from unigate.errors import UpstreamRejected
from unigate.providers.base import MediaCall, Provider, ProviderContext, Reply, RouteFailed, Target
from unigate.providers.http import UpstreamHTTP, form_headers, form_writer, read_all, relay_bytes

PROVIDER_TYPE = "fish"
DEFAULT_BASE_URL = "https://api.fish.audio"


class FishProvider(Provider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset({"fish.tts", "fish.asr"})

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        headers = {"Content-Type": "application/json", **config.headers}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self.http = UpstreamHTTP(config.base_url or DEFAULT_BASE_URL, headers)

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def media(self, call: MediaCall, target: Target) -> Reply:
        if call.op == "fish.tts":
            resp = await self.http.post(
                "/v1/tts",
                call.raw or orjson.dumps(call.payload),
                target.timeouts,
                {"model": target.upstream_model},
            )
        elif call.op == "fish.asr" and call.form is not None:
            writer = form_writer(call.form)
            resp = await self.http.post("/v1/asr", writer, target.timeouts, form_headers(writer))
        else:
            return await super().media(call, target)
        if resp.status >= 400:
            status = resp.status
            data = await read_all(resp, "error response")
            resp.release()
            if status == 429 or status >= 500 or status in (401, 403):
                raise RouteFailed(f"The upstream answered HTTP {status}.", 429 if status == 429 else 502)
            raise UpstreamRejected(status, _message(data))
        content_type = resp.headers.get("Content-Type", "application/octet-stream").encode("latin-1")
        if call.op == "fish.tts":
            return Reply(content_type=content_type, stream=relay_bytes(resp), close=resp.close)
        return Reply(content_type=content_type, body=await read_all(resp))


def _message(data: bytes) -> str:
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return "The upstream rejected the request."
    message = parsed.get("message") if isinstance(parsed, dict) else None
    return message if isinstance(message, str) else "The upstream rejected the request."
