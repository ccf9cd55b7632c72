"""Turn a routed OpenAI-format reply into another client format (Anthropic, Gemini): a body is
translated once; a stream is translated event by event as it is relayed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from unigate.providers.base import Reply, StreamBroken
from unigate.providers.translated import StreamTranslator
from unigate.usage.recorder import Usage

BodyTranslation = Callable[[dict[str, Any], str], dict[str, Any]]


def presenter(
    fmt: str, model: str, body: BodyTranslation, stream: Callable[[str, Usage], StreamTranslator]
) -> Callable[[Reply], Reply]:
    """`stream` builds a stream's translator from the model and the route's running usage."""

    def present(reply: Reply) -> Reply:
        if reply.wire == fmt:
            return reply  # the upstream spoke the client's format: relayed untouched
        if reply.stream is None:
            data = orjson.dumps(body(orjson.loads(reply.body), model))
            return Reply(reply.status, b"application/json", data, usage=reply.usage, headers=reply.headers)
        events = _translated(stream(model, reply.usage), reply.stream)
        return Reply(
            reply.status,
            b"text/event-stream",
            stream=events,
            usage=reply.usage,
            headers=reply.headers,
            close=reply.close,
        )

    return present


async def _translated(translator: StreamTranslator, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    async for run in chunks:
        out = translator.feed(run)
        if out:
            yield out
    tail = translator.finish()
    if translator.broken:
        # The relay ends the client's stream with its format's in-band error event.
        raise StreamBroken("The upstream stream ended before completion.")
    if tail:
        yield tail
