"""Framing shared by the sandbox endpoints: JSON replies, stream replies, ids and usage blocks (SSE
events themselves are written by core's `unigate.translate.sse`)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from unigate.providers.base import Reply
from unigate.usage.recorder import Usage

EVENT_STREAM = b"text/event-stream"
FINGERPRINT = "fp_sandbox"


def new_id(prefix: str) -> str:
    # Ids are the one part of a reply that is deliberately not deterministic: clients and
    # logs rely on them being unique per request.
    return prefix + secrets.token_hex(12)


def now() -> int:
    return int(time.time())


def usage_block(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def json_reply(obj: Any, usage: Usage) -> Reply:
    return Reply(status=200, content_type=b"application/json", body=orjson.dumps(obj), usage=usage)


def stream_reply(events: Callable[[Usage], AsyncIterator[bytes]]) -> Reply:
    """A streaming Reply whose generator fills the Reply's own Usage as it goes."""
    reply = Reply(status=200, content_type=EVENT_STREAM)
    reply.stream = events(reply.usage)
    return reply


async def pause() -> None:
    # Yield to the event loop between chunks so a stream behaves like a real one (the relay
    # can interleave writes and notice disconnects) without any wall-clock delay.
    await asyncio.sleep(0)
