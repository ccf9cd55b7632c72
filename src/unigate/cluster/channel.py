"""Change notifications over Redis pub/sub, between every worker of every replica.

A message carries no data of its own, only "the change feed has row `seq`, written by
`origin`": a receiver reads the feed from the database (store/changes.py), which stays the one
truth. So a message lost, duplicated, reordered or sent by another deployment on the same
Redis (pub/sub channels ignore the database number) costs at most one cheap read, and no key
material or hash ever travels through Redis.

Pub/sub delivers only to subscribers connected at the time: the subscriber reconnects by
itself with backoff, and the fan-out checks the feed after every reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson
from redis.exceptions import RedisError

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import PubSub

CHANNEL = b"unigate:changes"
# First wait before reconnecting, doubled per failure up to the cap: a Redis that comes back is
# noticed within the cap, and a down one costs a refused connection a second per worker.
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 1.0
# One read's wait for a message; the loop goes round so that a stop is noticed.
READ_SECONDS = 1.0
PUBLISH_SECONDS = 1.0  # the client's own timeouts are shorter; this bounds the whole call

OnMessage = Callable[[int, str], None]  # (seq, origin)
OnState = Callable[[bool, str], None]  # (subscribed, why)


class RedisChannel:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def publish(self, seq: int, origin: str) -> None:
        """Raises (RedisError, OSError, TimeoutError) when Redis cannot take it."""
        message = orjson.dumps({"seq": seq, "origin": origin})
        async with asyncio.timeout(PUBLISH_SECONDS):
            try:
                await self._redis.publish(CHANNEL, message)
            except (RedisError, OSError):
                # A connection pooled before Redis restarted fails at its first use; a second
                # failure is Redis itself. (A message sent twice costs a receiver one read.)
                await self._redis.publish(CHANNEL, message)

    async def ping(self) -> None:
        async with asyncio.timeout(PUBLISH_SECONDS):
            await self._redis.ping()

    async def listen(self, on_message: OnMessage, on_state: OnState) -> None:
        """Subscribe and hand every message on, until cancelled; reconnects after any failure."""
        backoff = BACKOFF_FIRST
        while True:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(CHANNEL)
                on_state(True, "subscribed")
                backoff = BACKOFF_FIRST
                await _relay(pubsub, on_message)
            except (RedisError, OSError, TimeoutError) as exc:
                on_state(False, f"{type(exc).__name__}: {exc}")
            finally:
                with contextlib.suppress(RedisError, OSError, TimeoutError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]  # untyped in redis-py
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)


async def _relay(pubsub: PubSub, on_message: OnMessage) -> None:
    while True:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=READ_SECONDS)
        if message is None or message.get("type") != "message":
            continue
        parsed = _parse(message.get("data"))
        if parsed is not None:
            on_message(*parsed)


def _parse(data: object) -> tuple[int, str] | None:
    """A well-formed message, or None (anything else on the channel is ignored)."""
    try:
        value = orjson.loads(data) if isinstance(data, bytes | str) else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    seq, origin = value.get("seq"), value.get("origin")
    if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(origin, str):
        return None
    return seq, origin[:120]
