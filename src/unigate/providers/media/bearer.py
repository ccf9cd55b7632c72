"""Base for adapters of vendors with Bearer keys and their own error bodies (Fish Audio,
Stability): one pooled session, and the upstream's error statuses mapped once."""

from __future__ import annotations

from collections.abc import Callable

import orjson

from unigate.config import ProviderConfig
from unigate.errors import UpstreamRejected
from unigate.providers.base import Provider, ProviderContext, RouteFailed
from unigate.providers.headers import upstream_headers
from unigate.providers.http import UpstreamHTTP, read_all
from unigate.transport.response import Response

REJECTED = "The upstream rejected the request."


class BearerProvider(Provider):
    default_base_url = ""
    json_body = True  # the session's default Content-Type; forms set their own per request

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        defaults = {"Content-Type": "application/json"} if self.json_body else {}
        credentials = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        headers = upstream_headers(defaults, config.headers, credentials)
        self.http = UpstreamHTTP(config.base_url or self.default_base_url, headers, config)

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()


async def raise_upstream_error(resp: Response, message: Callable[[object], str | None]) -> None:
    """429, 5xx and refused credentials: try another route; other 4xx: the client's fault,
    relayed with the upstream's message (read by `message` from its parsed error body)."""
    status = resp.status
    try:
        data = await read_all(resp, "error response")
    finally:
        resp.release()
    if status == 429 or status >= 500 or status in (401, 403):
        raise RouteFailed(f"The upstream answered HTTP {status}.", 429 if status == 429 else 502)
    try:
        text = message(orjson.loads(data))
    except orjson.JSONDecodeError:
        text = None
    raise UpstreamRejected(status, text or REJECTED)
