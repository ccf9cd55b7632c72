"""Base for adapters of vendors with Bearer keys and their own error bodies (Fish Audio,
Stability): one pooled session."""

from __future__ import annotations

from unigate.config import ProviderConfig
from unigate.providers.base import Provider, ProviderContext
from unigate.providers.headers import upstream_headers
from unigate.providers.http import UpstreamHTTP


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
