"""`anthropic` protocol: the Anthropic Messages API behind the OpenAI-format chat endpoint.

Requests go to `POST {base_url}/v1/messages` (`x-api-key`, `anthropic-version`); answers and
SSE events come back through the translators in `unigate.translate.anthropic`. An Anthropic
client's own request is relayed instead (`native`): its body bytes with only the model id
replaced, its query string (`?beta=true`) and its `anthropic-beta` / `anthropic-version`
headers. Token counts: `POST /v1/messages/count_tokens`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from unigate.config import ProviderConfig
from unigate.providers.base import ProviderContext, Reply, RouteFailed, Target, TextCall
from unigate.providers.model_list import Listing
from unigate.providers.same_format import ClientRequest, request_body, with_query
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

if TYPE_CHECKING:
    from unigate.batches.native import NativeBatches

PROVIDER_TYPE = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
_BETA = "anthropic-beta"
# What `count_tokens` takes of a Messages request (it refuses `max_tokens` and sampling fields).
_COUNTED = ("model", "messages", "system", "tools", "tool_choice")


class AnthropicProvider(TranslatingChatProvider):
    protocol = PROVIDER_TYPE
    default_base_url = DEFAULT_BASE_URL
    native_formats = frozenset({"anthropic"})
    models_listing = Listing("/v1/models?limit=1000")

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        self.batches: NativeBatches | None = None
        if config.batches == "native":  # whole batches go to the upstream's Message Batches API
            # Imported here, at the build of a provider configured for it: a worker whose
            # providers relay no batches never loads the vendor's batch protocol.
            from unigate.providers.anthropic.batches import AnthropicBatches

            self.batches = AnthropicBatches(self.http, self.timeouts(), self.redactor)

    def native_batches(self) -> NativeBatches | None:
        return self.batches

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

    async def native(
        self, payload: dict[str, Any], target: Target, stream: bool, client: ClientRequest | None = None
    ) -> Reply:
        """A `/v1/messages` call relayed byte for byte, only the model id mapped."""
        client = client or ClientRequest()
        body = request_body(payload, target.upstream_model, client.raw)
        path = with_query("/v1/messages", client.query)
        headers = self._relayed_headers(client)
        return await self.relay_same_format(
            path, body, target, stream, "anthropic", _take_usage, b"message_stop", headers
        )

    async def count_native(self, payload: dict[str, Any], target: Target, client: ClientRequest) -> Reply:
        body = request_body(payload, target.upstream_model, client.raw)
        path = with_query("/v1/messages/count_tokens", client.query)
        data = await self.post_json(path, body, target, self._relayed_headers(client))
        return Reply(body=data, wire="anthropic")

    async def count_canonical(self, payload: dict[str, Any], target: Target) -> int:
        request = openai_to_anthropic_request(payload, target.upstream_model)
        body = orjson.dumps({name: request[name] for name in _COUNTED if name in request})
        answer = _object(await self.post_json("/v1/messages/count_tokens", body, target))
        count = answer.get("input_tokens")
        if type(count) is not int or count < 0:
            raise RouteFailed("The upstream's token count has no `input_tokens`.")
        return count

    def _relayed_headers(self, client: ClientRequest) -> dict[str, str]:
        """The client's vendor headers; betas the operator configured for this provider are
        kept beside the client's own."""
        headers = dict(client.headers)
        configured = next((v for k, v in self.config.headers.items() if k.lower() == _BETA), "")
        if configured and _BETA in headers:
            names = [b.strip() for b in f"{configured},{headers[_BETA]}".split(",") if b.strip()]
            headers[_BETA] = ",".join(dict.fromkeys(names))
        return headers


def _object(data: bytes) -> dict[str, Any]:
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise RouteFailed("The upstream's answer is not JSON.") from None
    return parsed if isinstance(parsed, dict) else {}


# Anthropic: message_start carries the input count, message_delta the running output count.
_take_usage = usage_scanner(b'"usage"', "input_tokens", "output_tokens")
