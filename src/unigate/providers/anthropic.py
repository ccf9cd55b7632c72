"""`anthropic` protocol: the Anthropic Messages API behind the OpenAI-format chat endpoint.

Requests are translated to `POST {base_url}/v1/messages` (`x-api-key`, `anthropic-version`);
answers and SSE events are translated back chunk by chunk by the stateful translators in
`unigate.translate.anthropic`, so the client sees OpenAI chunks as the upstream produces them.
"""

from __future__ import annotations

import orjson

from unigate.config import ProviderConfig
from unigate.providers.base import (
    Provider,
    ProviderContext,
    Reply,
    RouteFailed,
    Target,
    TextCall,
)
from unigate.providers.http import UpstreamHTTP, read_all
from unigate.providers.translated import raise_for_status, translate_stream
from unigate.translate.anthropic import (
    AnthropicToOpenAIStream,
    anthropic_to_openai_response,
    openai_to_anthropic_request,
)
from unigate.usage.recorder import Usage

PROVIDER_TYPE = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicProvider(Provider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset({"chat"})

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        headers = {"Content-Type": "application/json", "anthropic-version": API_VERSION, **config.headers}
        if config.api_key:
            headers["x-api-key"] = config.api_key
        self.http = UpstreamHTTP(config.base_url or DEFAULT_BASE_URL, headers)

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def chat(self, call: TextCall, target: Target) -> Reply:
        body = orjson.dumps(openai_to_anthropic_request(call.payload, target.upstream_model))
        resp = await self.http.post("/v1/messages", body, target.timeouts)
        if resp.status >= 400:
            await raise_for_status(resp)
        if call.stream:
            reply = Reply(content_type=b"text/event-stream", close=resp.close)
            translator = AnthropicToOpenAIStream(call.model, call.include_usage)
            reply.stream = translate_stream(resp, translator, reply.usage)
            return reply
        data = await read_all(resp)
        try:
            answer = anthropic_to_openai_response(orjson.loads(data), call.model)
        except orjson.JSONDecodeError:
            raise RouteFailed("The upstream's answer is not JSON.") from None
        usage = answer.get("usage") or {}
        return Reply(
            body=orjson.dumps(answer),
            usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
        )
