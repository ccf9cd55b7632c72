"""The Redis connection a scaled-out gateway shares between its replicas (`UNIGATE_REDIS_URL`):
one client per worker process, with short timeouts, so an unreachable Redis costs a request at
most a fraction of a second before the caller's documented fallback takes over, never a hang.

Redis holds only what must be shared live across replicas (limit counters, change
notifications); durable state stays in the database."""

from __future__ import annotations

from typing import TYPE_CHECKING

from unigate.extras import require

if TYPE_CHECKING:
    from redis.asyncio import Redis

# Loopback or same-datacenter Redis answers in well under a millisecond; these bound how long
# a request can wait on one that stopped answering.
CONNECT_TIMEOUT = 0.5
COMMAND_TIMEOUT = 0.5


def connect(url: str) -> Redis:
    """A client for `url` (`redis://` or `rediss://`, database and password in the URL).
    Connections are made lazily, so a Redis that is down at start-up does not stop the
    gateway; its callers see the failure and apply their fallback."""
    require("redis")
    from redis.asyncio import Redis

    return Redis.from_url(
        url,
        socket_connect_timeout=CONNECT_TIMEOUT,
        socket_timeout=COMMAND_TIMEOUT,
        health_check_interval=15,
        retry_on_timeout=False,
        decode_responses=False,
    )
