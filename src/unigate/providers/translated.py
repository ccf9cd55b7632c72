"""Shared plumbing for adapters whose upstream speaks another format than the client: run a
stateful stream translator over the upstream body, and map the upstream's error statuses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Protocol

import aiohttp
import orjson

from unigate.errors import UpstreamRejected
from unigate.providers.base import RouteFailed, StreamBroken
from unigate.providers.http import read_all
from unigate.usage.recorder import Usage


class StreamTranslator(Protocol):
    prompt_tokens: int
    completion_tokens: int
    broken: bool

    def feed(self, data: bytes) -> bytes: ...

    def finish(self) -> bytes: ...


async def translate_stream(
    resp: aiohttp.ClientResponse, translator: StreamTranslator, usage: Usage
) -> AsyncIterator[bytes]:
    try:
        try:
            async for data in resp.content.iter_any():
                out = translator.feed(data)
                usage.prompt_tokens, usage.completion_tokens = (
                    translator.prompt_tokens,
                    translator.completion_tokens,
                )
                if out:
                    yield out
        except TimeoutError:
            raise StreamBroken("The upstream stream stalled past the read timeout.") from None
        except (aiohttp.ClientError, asyncio.IncompleteReadError) as exc:
            raise StreamBroken(f"The upstream stream broke: {type(exc).__name__}.") from None
        tail = translator.finish()
        usage.prompt_tokens, usage.completion_tokens = translator.prompt_tokens, translator.completion_tokens
        if translator.broken:
            # The relay ends the client's stream with the in-band error of its own format.
            raise StreamBroken("The upstream stream ended before completion.")
        if tail:
            yield tail
    finally:
        resp.release()


async def raise_for_status(resp: aiohttp.ClientResponse) -> None:
    status = resp.status
    try:
        data = await read_all(resp, "error response")
    finally:
        resp.release()
    if status == 429 or status >= 500:  # includes Anthropic's 529 "overloaded"
        raise RouteFailed(
            f"The upstream answered HTTP {status}.",
            429 if status == 429 else 502,
            resp.headers.get("Retry-After"),
        )
    if status in (401, 403):
        raise RouteFailed("The upstream refused the gateway's credentials.")
    message = "The upstream rejected the request."
    try:
        err = orjson.loads(data).get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            message = err["message"]
    except (orjson.JSONDecodeError, AttributeError):
        pass
    raise UpstreamRejected(status, message)
