"""`stability` protocol: Stability AI's `POST {base}/v2beta/stable-image/generate/{variant}`.
The form is rebuilt from the validated parts; the client's Accept decides between image bytes
(relayed with their `finish-reason` and `seed` headers) and base64 JSON."""

from __future__ import annotations

import orjson

from unigate.config import ProviderConfig
from unigate.errors import UpstreamRejected
from unigate.providers.base import MediaCall, Provider, ProviderContext, Reply, RouteFailed, Target
from unigate.providers.http import UpstreamHTTP, form_headers, form_writer, read_all

PROVIDER_TYPE = "stability"
DEFAULT_BASE_URL = "https://api.stability.ai"
_PASSED_HEADERS = ("finish-reason", "seed")


class StabilityProvider(Provider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset({"stability.generate"})

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        headers = dict(config.headers)
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self.http = UpstreamHTTP(config.base_url or DEFAULT_BASE_URL, headers)

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def media(self, call: MediaCall, target: Target) -> Reply:
        if call.op != "stability.generate" or call.form is None:
            return await super().media(call, target)
        replace = {"model": target.upstream_model} if call.variant == "sd3" else {}
        writer = form_writer(call.form, replace)
        accept = "application/json" if "application/json" in call.accept else "image/*"
        headers = {**form_headers(writer), "Accept": accept}
        resp = await self.http.post(
            f"/v2beta/stable-image/generate/{call.variant}", writer, target.timeouts, headers
        )
        data = await read_all(resp)
        resp.release()
        if resp.status >= 400:
            if resp.status == 429 or resp.status >= 500 or resp.status == 401:
                raise RouteFailed(
                    f"The upstream answered HTTP {resp.status}.", 429 if resp.status == 429 else 502
                )
            raise UpstreamRejected(resp.status, _message(data))
        content_type = resp.headers.get("Content-Type", "application/octet-stream").encode("latin-1")
        passed = [
            (h.encode(), resp.headers[h].encode("latin-1")) for h in _PASSED_HEADERS if h in resp.headers
        ]
        return Reply(content_type=content_type, body=data, headers=passed)


def _message(data: bytes) -> str:
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return "The upstream rejected the request."
    errors = parsed.get("errors") if isinstance(parsed, dict) else None
    if isinstance(errors, list) and errors and all(isinstance(e, str) for e in errors):
        return "; ".join(errors)
    return "The upstream rejected the request."
