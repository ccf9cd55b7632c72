"""How an OpenAI-compatible upstream's error answers map to the adapter contract, shared by the
`openai` adapter's relays (chat, media, Responses): what another route may fix is `RouteFailed`,
the client's own fault is `UpstreamRejected` with the upstream's OpenAI error body relayed.
Bodies are already scrubbed of the provider's secrets by `UpstreamHTTP`."""

from __future__ import annotations

from typing import NoReturn

import orjson

from unigate.errors import UpstreamRejected
from unigate.providers.base import RouteFailed
from unigate.providers.http import read_all
from unigate.transport.response import Response


async def raise_for_status(resp: Response) -> NoReturn:
    status = resp.status
    try:
        data = await read_all(resp, "error response")
    finally:
        resp.release()
    if status == 429:
        raise RouteFailed("The upstream is rate limiting requests.", 429, resp.headers.get("Retry-After"))
    if status >= 500:
        raise RouteFailed(f"The upstream failed with HTTP {status}.")
    if status in (401, 403):
        # The gateway's own upstream credentials were refused: not the client's fault, and
        # the upstream's message may quote part of that credential, so it is never relayed.
        raise RouteFailed("The upstream refused the gateway's credentials.")
    if status == 408:
        raise RouteFailed("The upstream timed out.", 504)
    raise UpstreamRejected(status, _error_message(data), data if _is_openai_error(data) else None)


def _is_openai_error(data: bytes) -> bool:
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return isinstance(parsed, dict) and isinstance(parsed.get("error"), dict)


def _error_message(data: bytes) -> str:
    try:
        parsed = orjson.loads(data)
        err = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
    except orjson.JSONDecodeError:
        pass
    return "The upstream rejected the request."
