"""Fetch a user-supplied URL (e.g. audio to upload) through the same SSRF guard as webhooks:
the address checked is the address dialled, redirects are not followed, size is capped.
`read_input` takes the other spelling of an input file as well, a base64 data URL.

What the client is told depends only on the URL it sent, never on what the gateway's DNS
answers: a host refused by its name or literal address is `url_refused`; a name refused at
connect time because its addresses are not public gets the answer of a name that does not
resolve or a host that refuses the connection (`url_fetch_failed`), so the gateway cannot be
used to learn which internal names exist or where they point. The operator's log line says
which it was, with the address."""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import Awaitable, Callable

from unigate.errors import InvalidRequest, PayloadTooLarge
from unigate.transport.errors import ConnectFailed, UpstreamError, UpstreamTimeout
from unigate.transport.response import Response
from unigate.webhooks.sender import WebhookSender
from unigate.webhooks.ssrf import PRIVATE_HINT, RefusedAddress, UnsafeURL, check_url, refusal

log = logging.getLogger("unigate.webhooks")

# Connect-time refusals, names that do not resolve and refused connections, alike.
NOT_CONNECTED = (
    "Could not connect to the URL's host (a host that does not resolve, refuses the connection or "
    f"has an address that is not public gets this answer; {PRIVATE_HINT})."
)


async def fetch_url(
    sender: WebhookSender, url: str, max_bytes: int, timeout: float = 30.0
) -> tuple[bytes, str]:
    """(body, content type) of a GET of `url`; 400 for refused or failed fetches, 413 past
    `max_bytes`. Messages never echo the upstream's body."""
    try:
        target = check_url(url, allow_private=sender.allow_private)
    except UnsafeURL as exc:
        raise InvalidRequest(
            f"The URL was refused: {refusal(exc)}.", param="url", code="url_refused"
        ) from None
    try:
        async with asyncio.timeout(timeout):
            resp = await sender.request("GET", target, b"", None, timeout)
            try:
                if resp.status != 200:
                    raise InvalidRequest(
                        f"Fetching the URL gave HTTP {resp.status}.", param="url", code="url_fetch_failed"
                    )
                declared = _content_length(resp)
                if declared is not None and declared > max_bytes:
                    raise PayloadTooLarge(f"The file at the URL exceeds {max_bytes} bytes.")
                return await _whole_body(resp, max_bytes), resp.headers.get("Content-Type", "")
            finally:
                resp.release()
    except (TimeoutError, UpstreamTimeout):
        raise InvalidRequest("Fetching the URL timed out.", param="url", code="url_fetch_failed") from None
    except RefusedAddress as exc:
        # The refused host and address (RefusedAddress's message), never the URL: query
        # strings carry tokens.
        log.warning("URL fetch refused by the SSRF guard at connect time: %s", exc)
        raise InvalidRequest(NOT_CONNECTED, param="url", code="url_fetch_failed") from None
    except ConnectFailed:
        raise InvalidRequest(NOT_CONNECTED, param="url", code="url_fetch_failed") from None
    except (UpstreamError, OSError):
        raise InvalidRequest("Fetching the URL failed.", param="url", code="url_fetch_failed") from None


def _content_length(resp: Response) -> int | None:
    value = resp.headers.get("Content-Length")
    return int(value) if value is not None and value.strip().isdigit() else None


async def _whole_body(resp: Response, max_bytes: int) -> bytes:
    """The entire body, or 413 as soon as it passes `max_bytes`. A body that ends before its
    Content-Length is a `ConnectionBroken` from the client: a failed fetch, never a silently
    shorter file."""
    data = bytearray()
    async for chunk in resp.iter_any():
        data += chunk
        if len(data) > max_bytes:
            raise PayloadTooLarge(f"The file at the URL exceeds {max_bytes} bytes.")
    return bytes(data)


def decode_data_url(url: str, param: str, max_bytes: int | None = None) -> bytes:
    """The bytes of a base64 `data:` URL; 400 naming `param` when it is not one, 413 past
    `max_bytes`."""
    head, _, payload = url.partition(",")
    if not head.endswith(";base64") or not payload:
        raise InvalidRequest(f"'{param}' must be a base64 data URL.", param=param, code="invalid_value")
    if max_bytes is not None and len(payload) // 4 * 3 > max_bytes + 2:
        raise PayloadTooLarge(f"The file in '{param}' exceeds {max_bytes} bytes.")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):  # ValueError: characters outside ASCII
        raise InvalidRequest(f"'{param}' is not valid base64.", param=param, code="invalid_value") from None


async def read_input(
    fetch: Callable[[str, int], Awaitable[tuple[bytes, str]]] | None, url: str, max_bytes: int, param: str
) -> bytes:
    """An input file given by URL: a data URL decoded, an http(s) URL fetched with `fetch`
    (`fetch_url` behind the gateway's SSRF guard); a refusal names `param`."""
    if url.startswith("data:"):
        return decode_data_url(url, param, max_bytes)
    if fetch is None:
        raise InvalidRequest("This gateway cannot fetch URL inputs.", param=param, code="url_refused")
    try:
        data, _ = await fetch(url, max_bytes)
    except InvalidRequest as exc:
        exc.param = param
        raise
    return data
