"""A stream's first event read before the route is committed to (routing/engine.py): a
failure there can still fall back to the next route. Its own module because it is an async
generator, which the compiled engine cannot hold (unigate/compiled.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from unigate.providers.base import Reply, RouteFailed, StreamBroken


async def peeked(reply: Reply) -> AsyncIterator[bytes]:
    """Read the first event now (so failures can still fall back) and chain the rest."""
    assert reply.stream is not None
    stream = reply.stream
    try:
        first = await anext(stream)
    except StopAsyncIteration:
        _close(reply)
        raise RouteFailed("The upstream closed the stream without sending anything.") from None
    except StreamBroken as exc:
        _close(reply)
        raise RouteFailed(str(exc)) from None

    async def chained() -> AsyncIterator[bytes]:
        yield first
        async for item in stream:
            yield item

    return chained()


def _close(reply: Reply) -> None:
    if reply.close is not None:
        reply.close()
