"""`anthropic` protocol: the Anthropic Messages API behind the OpenAI-format chat endpoint.

Requests go to `POST {base_url}/v1/messages` (`x-api-key`, `anthropic-version`); answers and
SSE events come back through the translators in `unigate.translate.anthropic`.
"""

from __future__ import annotations

from typing import Any

import orjson

from unigate.providers.base import Reply, Target, TextCall
from unigate.providers.translated import (
    StreamTranslator,
    TranslatingChatProvider,
    usage_scanner,
)
from unigate.translate.anthropic import (
    AnthropicToOpenAIStream,
    anthropic_to_openai_response,
    openai_to_anthropic_request,
)

PROVIDER_TYPE = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicProvider(TranslatingChatProvider):
    protocol = PROVIDER_TYPE
    default_base_url = DEFAULT_BASE_URL
    native_formats = frozenset({"anthropic"})

    def auth_headers(self, api_key: str) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def request(self, call: TextCall, target: Target) -> tuple[str, dict[str, Any]]:
        return "/v1/messages", openai_to_anthropic_request(call.payload, target.upstream_model)

    def answer(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        return anthropic_to_openai_response(body, model)

    def stream_translator(self, call: TextCall) -> StreamTranslator:
        return AnthropicToOpenAIStream(call.model, call.include_usage)

    async def native(self, payload: dict[str, Any], target: Target, stream: bool) -> Reply:
        """A `/v1/messages` call relayed byte for byte, only the model id mapped."""
        body = orjson.dumps({**payload, "model": target.upstream_model})
        return await self.relay_same_format(
            "/v1/messages", body, target, stream, "anthropic", _take_usage, b"message_stop"
        )


# Anthropic: message_start carries the input count, message_delta the running output count.
_take_usage = usage_scanner(b'"usage"', "input_tokens", "output_tokens")
