"""Upstream bodies relayed as they arrive: SSE event runs and raw bytes, with a transport
failure after the first byte reported as `StreamBroken` (before it, `http.py` maps failures
to `RouteFailed`). Async generators: kept apart from `http.py`, which is compiled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from unigate.providers.base import StreamBroken
from unigate.translate.sse import EventRuns
from unigate.transport.errors import UpstreamError, UpstreamTimeout
from unigate.transport.response import Response


def stream_error(exc: UpstreamError) -> StreamBroken:
    """A transport failure after the first byte, as the relay reports it."""
    if isinstance(exc, UpstreamTimeout):
        return StreamBroken("The upstream stream stalled past the read timeout.")
    return StreamBroken(f"The upstream stream broke: {exc}.")


async def sse_events(resp: Response) -> AsyncIterator[bytes]:
    """Yield runs of *complete* SSE events (each run ends with a blank line), exactly as the
    upstream framed them (`translate/sse.py`'s `EventRuns`)."""
    runs = EventRuns()
    feed = runs.feed
    try:
        async for data in resp.iter_any():
            run = feed(data)
            if run:
                yield run
    except UpstreamError as exc:
        raise stream_error(exc) from None
    tail = runs.rest()
    if tail:
        yield tail


async def relay_bytes(resp: Response) -> AsyncIterator[bytes]:
    """An upstream body relayed as it arrives (audio, images): bounded memory whatever its
    length (reading pauses while the client is slower than the upstream); a break after the
    first byte is `StreamBroken`."""
    try:
        async for data in resp.iter_any():
            yield data
    except UpstreamError as exc:
        raise stream_error(exc) from None
    finally:
        resp.release()
