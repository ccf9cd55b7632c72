"""Shared plumbing for adapters whose upstream speaks another format than the client: run a
stateful stream translator over the upstream body, and read the upstream's error bodies."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

import orjson

from unigate.config import ProviderConfig
from unigate.providers.base import (
    Provider,
    ProviderContext,
    Reply,
    RouteFailed,
    StreamBroken,
    Target,
    TextCall,
    Timeouts,
)
from unigate.providers.body_stream import sse_events, stream_error
from unigate.providers.headers import upstream_headers
from unigate.providers.http import UpstreamHTTP, raise_for_answer, read_all
from unigate.providers.model_list import Listing, listed_models
from unigate.providers.redact import STREAM_ERROR_MARK, Redactor
from unigate.providers.upstream_status import Said, error_object, message_of
from unigate.transport.errors import UpstreamError
from unigate.transport.response import Response
from unigate.usage.recorder import Usage


class StreamTranslator(Protocol):
    prompt_tokens: int
    completion_tokens: int
    broken: bool

    def feed(self, data: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


class TranslatingChatProvider(Provider):
    """A chat adapter for an upstream with its own wire format: a subclass says how to build
    the upstream request and how to read its answers; sending, error mapping and streaming are
    shared here."""

    capabilities = frozenset({"chat"})
    default_base_url = ""
    models_listing: Listing | None = None  # where the upstream lists its models

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        json_type = {"Content-Type": "application/json"}
        headers = upstream_headers(json_type, config.headers, self.auth_headers(config.api_key))
        self.http = UpstreamHTTP(config.base_url or self.default_base_url, headers, config)

    def auth_headers(self, api_key: str) -> dict[str, str]:
        raise NotImplementedError

    def request(self, call: TextCall, target: Target) -> tuple[str, dict[str, Any]]:
        """(path, body) of the upstream request for an OpenAI-format call."""
        raise NotImplementedError

    def answer(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        """The upstream's JSON answer as an OpenAI chat completion."""
        raise NotImplementedError

    def stream_translator(self, call: TextCall) -> StreamTranslator:
        raise NotImplementedError

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def list_models(self, timeouts: Timeouts) -> list[str]:
        if self.models_listing is None:
            return await super().list_models(timeouts)
        return await listed_models(self.http, self.models_listing, timeouts, said)

    async def relay_same_format(
        self,
        path: str,
        body: bytes,
        target: Target,
        stream: bool,
        wire: str,
        scan: UsageScan,
        last: bytes,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """A call already in the upstream's own format, relayed as is (usage read on the way;
        a stream without an event containing `last` is a broken one); `headers` are the
        client's vendor headers, above the adapter's defaults of the same name."""
        # Text: a repeat is harmless.
        resp = await self.http.post(path, body, target.timeouts, headers=headers, replay=True)
        if resp.status >= 400:
            await raise_for_answer(resp, said)
        if stream:
            reply = Reply(content_type=b"text/event-stream", close=resp.close, wire=wire)
            reply.stream = relay_native(resp, reply.usage, scan, last, self.redactor)
            return reply
        data = await read_all(resp)
        usage = Usage()
        scan(data, usage)
        return Reply(body=data, usage=usage, wire=wire)

    async def post_json(
        self, path: str, body: bytes, target: Target, headers: Mapping[str, str] | None = None
    ) -> bytes:
        """A short JSON exchange (a token count): the upstream's answer body; failures mapped
        like a call's."""
        resp = await self.http.post(path, body, target.timeouts, headers=headers, replay=True)
        if resp.status >= 400:
            await raise_for_answer(resp, said)
        return await read_all(resp)

    async def chat(self, call: TextCall, target: Target) -> Reply:
        path, body = self.request(call, target)
        resp = await self.http.post(path, orjson.dumps(body), target.timeouts, replay=True)
        if resp.status >= 400:
            await raise_for_answer(resp, said)
        if call.stream:
            reply = Reply(content_type=b"text/event-stream", close=resp.close)
            reply.stream = translate_stream(resp, self.stream_translator(call), reply.usage, self.redactor)
            return reply
        data = await read_all(resp)
        try:
            answer = self.answer(orjson.loads(data), call.model)
        except orjson.JSONDecodeError:
            raise RouteFailed("The upstream's answer is not JSON.") from None
        usage = answer.get("usage") or {}
        return Reply(
            body=orjson.dumps(answer),
            usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
        )


async def translate_stream(
    resp: Response, translator: StreamTranslator, usage: Usage, redactor: Redactor
) -> AsyncIterator[bytes]:
    try:
        try:
            async for data in resp.iter_any():
                out = translator.feed(data)
                usage.prompt_tokens, usage.completion_tokens = (
                    translator.prompt_tokens,
                    translator.completion_tokens,
                )
                if out and translator.broken:  # an upstream error event, in the client's format
                    out = redactor.data(out)
                if out:
                    yield out
        except UpstreamError as exc:
            raise stream_error(exc) from None
        tail = translator.finish()
        usage.prompt_tokens, usage.completion_tokens = translator.prompt_tokens, translator.completion_tokens
        if translator.broken:
            # The relay ends the client's stream with the in-band error of its own format.
            raise StreamBroken("The upstream stream ended before completion.")
        if tail:
            yield redactor.data(tail) if tail.find(STREAM_ERROR_MARK) >= 0 else tail
    finally:
        resp.release()


UsageScan = Callable[[bytes, Usage], None]


def usage_scanner(marker: bytes, prompt_key: str, output_key: str) -> UsageScan:
    """A reader of token counts from a native body or event run, without parsing the JSON:
    counters are plain integers and upstreams repeat running totals, so the last one wins."""
    prompt_re = re.compile(rb'"' + prompt_key.encode() + rb'"\s*:\s*(\d+)')
    output_re = re.compile(rb'"' + output_key.encode() + rb'"\s*:\s*(\d+)')

    def scan(data: bytes, usage: Usage) -> None:
        if data.find(marker) < 0:
            return
        found_in = prompt_re.findall(data)
        found_out = output_re.findall(data)
        if found_in:
            usage.prompt_tokens = int(found_in[-1])
        if found_out:
            usage.completion_tokens = int(found_out[-1])

    return scan


async def relay_native(
    resp: Response, usage: Usage, take_usage: UsageScan, last: bytes, redactor: Redactor
) -> AsyncIterator[bytes]:
    """Relay a same-format stream event run by event run, reading usage on the way; a stream
    that ends before any event containing `last` is a broken one. An error event is the
    upstream's own words: scrubbed of the provider's secrets."""
    terminated = False
    try:
        async for run in sse_events(resp):
            take_usage(run, usage)
            terminated = terminated or run.find(last) >= 0
            if run.find(STREAM_ERROR_MARK) >= 0:
                run = redactor.data(run)
            yield run
    finally:
        resp.release()
    if not terminated:
        raise StreamBroken("The upstream stream ended before completion.")


def said(data: bytes) -> Said:
    """Anthropic's and Google's error bodies both carry `error.message`."""
    return Said(message_of(error_object(data)))
