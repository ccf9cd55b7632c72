"""A streamed answer of an OpenAI-compatible upstream, relayed event run by event run
(text_relay.py starts it): the upstream's events go out as received, only those that mention
`usage` are parsed. An async generator, so it stays Python (compiled.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from unigate.providers.body_stream import sse_events
from unigate.providers.redact import STREAM_ERROR_MARK, Redactor
from unigate.translate.sse import data_lines, event_data, split_events
from unigate.transport.response import Response
from unigate.usage.recorder import Usage


async def relay_events(
    resp: Response, usage: Usage, strip_usage_chunk: bool, redactor: Redactor
) -> AsyncIterator[bytes]:
    # Until the upstream reports usage (its last chunk), count one completion token per
    # event after the role chunk: OpenAI-style upstreams stream about one token per chunk,
    # so a client that leaves mid-stream is still accounted for what it received.
    events = 0
    reported = False
    try:
        async for run in sse_events(resp):
            if run.find(b'"usage"') >= 0:
                run, found = take_usage(run, usage, strip_usage_chunk)
                reported = reported or found
                if not run:
                    continue
            if not reported:
                events += data_lines(run)
                usage.completion_tokens = max(0, events - 1)
            if run.find(STREAM_ERROR_MARK) >= 0:  # an in-band error: the upstream's words, scrubbed
                run = redactor.data(run)
            yield run
    finally:
        resp.release()


def take_usage(run: bytes, usage: Usage, strip: bool) -> tuple[bytes, bool]:
    """Record usage from the events of `run` (and say whether there was any); drop the
    usage-only chunk the client did not ask for (the gateway requested it, for accounting)."""
    kept = []
    found = False
    for event in split_events(run):
        data = event_data(event)
        if data.find(b'"usage"') >= 0:
            try:
                obj = orjson.loads(data)
            except orjson.JSONDecodeError:
                obj = None
            if _usage_from(obj, usage):
                found = True
                if strip and isinstance(obj, dict) and obj.get("choices") == []:
                    continue
        kept.append(event)
    return b"".join(kept), found


def _usage_from(obj: Any, usage: Usage) -> bool:
    if not isinstance(obj, dict):
        return False
    found = obj.get("usage")
    if not isinstance(found, dict):
        return False
    usage.prompt_tokens = int(found.get("prompt_tokens") or 0)
    usage.completion_tokens = int(found.get("completion_tokens") or 0)
    return True
