"""Fetch a user-supplied URL (e.g. audio to upload) through the same SSRF guard as webhooks:
the address checked is the address dialled, redirects are not followed, size is capped.

What the client is told depends only on the URL it sent, never on what the gateway's DNS
answers: a host refused by its name or literal address is `url_refused`; a name refused at
connect time because its addresses are not public gets the answer of a name that does not
resolve or a host that refuses the connection (`url_fetch_failed`), so the gateway cannot be
used to learn which internal names exist or where they point. The operator's log line says
which it was, with the address."""

from __future__ import annotations

import logging

import aiohttp

from unigate.errors import InvalidRequest, PayloadTooLarge
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
        async with sender.session.get(
            target, allow_redirects=False, timeout=aiohttp.ClientTimeout(total=timeout)
        ) as resp:
            if resp.status != 200:
                raise InvalidRequest(
                    f"Fetching the URL gave HTTP {resp.status}.", param="url", code="url_fetch_failed"
                )
            if resp.content_length is not None and resp.content_length > max_bytes:
                raise PayloadTooLarge(f"The file at the URL exceeds {max_bytes} bytes.")
            return await _whole_body(resp, max_bytes), resp.headers.get("Content-Type", "")
    except TimeoutError:
        raise InvalidRequest("Fetching the URL timed out.", param="url", code="url_fetch_failed") from None
    except aiohttp.ClientConnectorError as exc:
        if isinstance(exc.os_error, RefusedAddress):
            # The refused host and address (RefusedAddress's message), never the URL: query
            # strings carry tokens.
            log.warning("URL fetch refused by the SSRF guard at connect time: %s", exc.os_error)
        raise InvalidRequest(NOT_CONNECTED, param="url", code="url_fetch_failed") from None
    except aiohttp.ClientError:
        raise InvalidRequest("Fetching the URL failed.", param="url", code="url_fetch_failed") from None


async def _whole_body(resp: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    """The entire body, or 413 as soon as it passes `max_bytes`. (`content.read(n)` answers
    only what is buffered so far - one network read - so a big file came back cut short.)
    A body that ends before its Content-Length is an aiohttp `ClientPayloadError`: a failed
    fetch, never a silently shorter file."""
    data = bytearray()
    async for chunk in resp.content.iter_any():
        data += chunk
        if len(data) > max_bytes:
            raise PayloadTooLarge(f"The file at the URL exceeds {max_bytes} bytes.")
    return bytes(data)
