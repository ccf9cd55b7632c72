"""`anthropic` protocol: the Anthropic Messages API behind the OpenAI-format chat endpoint.

Requests go to `POST {base_url}/v1/messages` (`x-api-key`, `anthropic-version`); answers and
SSE events come back through the translators in `unigate.translate.anthropic`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson

from unigate.providers.base import Reply, StreamBroken, Target, TextCall
from unigate.providers.http import read_all, sse_events
from unigate.providers.translated import StreamTranslator, TranslatingChatProvider, raise_for_status
from unigate.translate.anthropic import (
    AnthropicToOpenAIStream,
    anthropic_to_openai_response,
    openai_to_anthropic_request,
)
from unigate.usage.recorder import Usage

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
        resp = await self.http.post("/v1/messages", body, target.timeouts)
        if resp.status >= 400:
            await raise_for_status(resp)
        if stream:
            reply = Reply(content_type=b"text/event-stream", close=resp.close, wire="anthropic")
            reply.stream = _relay_events(resp, reply.usage)
            return reply
        data = await read_all(resp)
        usage = Usage()
        _take_usage(data, usage)
        return Reply(body=data, usage=usage, wire="anthropic")


_INPUT_RE = re.compile(rb'"input_tokens"\s*:\s*(\d+)')
_OUTPUT_RE = re.compile(rb'"output_tokens"\s*:\s*(\d+)')


def _take_usage(data: bytes, usage: Usage) -> None:
    """Token counts from Anthropic JSON (message_start carries the input, message_delta the
    running output count; the last value seen wins)."""
    if b'"usage"' not in data:
        return
    found_in = _INPUT_RE.findall(data)
    found_out = _OUTPUT_RE.findall(data)
    if found_in:
        usage.prompt_tokens = int(found_in[-1])
    if found_out:
        usage.completion_tokens = int(found_out[-1])


async def _relay_events(resp: aiohttp.ClientResponse, usage: Usage) -> AsyncIterator[bytes]:
    terminated = False
    try:
        async for run in sse_events(resp):
            _take_usage(run, usage)
            terminated = terminated or b"message_stop" in run
            yield run
    finally:
        resp.release()
    if not terminated:
        raise StreamBroken("The upstream stream ended before completion.")
