"""Media the gateway stores and serves itself (sandbox results, uploads): `GET /media/{name}`
(and `HEAD`). Names are unguessable (they embed random ids), so links work in players without
headers.

A stored file is served as the type its first bytes prove, never as the type its name claims:
each response carries `X-Content-Type-Options: nosniff`, and a file whose content does not
match its extension (a `.png` that is not a PNG) is sent as `application/octet-stream` with
`Content-Disposition: attachment`, so a browser neither renders nor runs it. Names are
bounded before the file store sees them: anything else is a 404 that echoes nothing.

Files come from the gateway's file store (storage/: the data dir, or a bucket shared by every
replica) and are streamed in chunks, so a large video is never held whole in memory. A shared
store's objects are relayed through the gateway rather than redirected to a presigned URL: the
link stays the same unguessable, key-less, cacheable `/media/` address whichever store holds
it, the checks above apply to every byte, and the bucket stays private."""

from __future__ import annotations

import asyncio
import base64
import logging
import re

from unigate.edge.asgi import Receive, Request
from unigate.edge.endpoints import Endpoint
from unigate.edge.media_types import SNIFF_BYTES, STORED_TYPES, UNVERIFIED_TYPE, verified_type
from unigate.errors import NotFound, StorageUnavailable
from unigate.gateway import Gateway
from unigate.music.record import AVATAR_NAME
from unigate.storage import Storage, StoredObject, media_key

log = logging.getLogger("unigate.storage")

_CACHE = (b"cache-control", b"public, max-age=86400")
NOSNIFF = (b"x-content-type-options", b"nosniff")
_ATTACHMENT = (b"content-disposition", b"attachment")
# Stored names are a prefix and a random id (~40 characters): 128 leaves room and keeps a
# name far below every file system's limit, so an overlong one is a 404, not an OSError.
NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}(\.[A-Za-z0-9]{1,5})$")


# The owner avatar of music clips (spec §2.2 types `avatar_image_url` as a URI): a 64x64 PNG
# built into the gateway, so the address always answers.
AVATAR_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAYAAACqaXHeAAABxUlEQVR42u2YvW3DMBCFfQ+uMkCQSVJ7kGyQ1n2QPq038CCp"
    "PYmRAdxalYFAsGSR98O7I9laFu97791REm2M1sfn77Xk+uNhRxZ1kRfgVoKQd3BtISgKuJYQFA1cWgiKCi4lBDLAc2pCBnhO"
    "bZQBnNMSyAhfUjMywpfUjk3ni1q4//P1Pvvb/vtkOg/IEn4JXFuIORHgEb7m+tp5YDIDamGkRVglgLT7XAhJER6xwaPzlklA"
    "ljO/NgXw7r52CtCT+49Yu38SRG/uT1MwEjAE6P1tULP/JY8ujbfEkQBtAaRc03LfJAHc4jXhzVqgFkIb3nQGlMJYwKufAjWn"
    "gxV4UwHGg9AQwM/aeur/FnPAZAZwHom1xSDN7wHe3wWOhx1tvYNP7yktBCLAa94fkeA19sG9F6LAS+13Z0Yk5zX2xVSRKPCc"
    "/f+zIqLzknVgTpmsa8qI6O5z68EzhTK7X50Ab+5z6sJapTK6v5iATCIssaD0j17jP1ffMyPHJzFOfCJHvygBEUVYW3Mx2Pnv"
    "4voz+tvrC4m2AHcDz/DVQ9CjCLU1sUFatwTXDDEnrYWQSqF4lLWFkG4/tV6WFkJr7pgNs1JBrAbtDcaI3cJEGSv8AAAAAElF"
    "TkSuQmCC"
)


async def send_stored(
    request: Request, storage: Storage, name: str, extension: str, cache: bool = True
) -> None:
    """Answer `request` (GET or HEAD) with the stored media file `name`, typed by its content."""
    head_only = request.method == "HEAD"
    found = await storage.open(media_key(name), head_only)
    if found is None:  # gone, a directory, unreadable: to the client all the same
        raise NotFound("No such media file.", code="media_not_found")
    content_type = verified_type(extension, found.head[:SNIFF_BYTES])
    headers = [(b"content-length", str(found.size).encode()), NOSNIFF]
    if content_type is None:
        headers += [(b"content-type", UNVERIFIED_TYPE), _ATTACHMENT]
    else:
        headers.append((b"content-type", content_type))
    if cache:
        headers.append(_CACHE)
    if head_only or len(found.head) >= found.size:  # HEAD, or a file read whole already
        await _send(request, headers, b"" if head_only else found.head)
        await found.close()
        return
    await _stream(request, headers, found)


async def _stream(request: Request, headers: list[tuple[bytes, bytes]], found: StoredObject) -> None:
    """The head, then the rest as it is read; stops reading when the client leaves."""
    headers.append((b"x-request-id", request.request_id.encode()))
    await request.send({"type": "http.response.start", "status": 200, "headers": headers})
    left = asyncio.ensure_future(_until_gone(request.receive))
    try:
        await request.send({"type": "http.response.body", "body": found.head, "more_body": True})
        async for chunk in found.rest:
            if left.done():
                return
            await request.send({"type": "http.response.body", "body": chunk, "more_body": True})
        await request.send({"type": "http.response.body", "body": b""})
    except StorageUnavailable:
        # Headers are out, so no error body can follow: the response ends short and the
        # server closes the connection, which the client sees as a failed download.
        log.warning("media download cut short on request %s: storage unavailable", request.request_id)
    finally:
        left.cancel()
        if left.done() and not left.cancelled():
            left.exception()  # retrieved, so a failed receive is not reported as unhandled
        await found.close()


async def _until_gone(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _send(request: Request, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    headers.append((b"x-request-id", request.request_id.encode()))
    await request.send({"type": "http.response.start", "status": 200, "headers": headers})
    await request.send({"type": "http.response.body", "body": body})


def endpoints(gw: Gateway) -> list[Endpoint]:
    async def serve(request: Request) -> None:
        name = request.params["name"]
        if name == AVATAR_NAME:
            headers = [
                (b"content-type", b"image/png"),
                (b"content-length", str(len(AVATAR_PNG)).encode()),
                NOSNIFF,
                _CACHE,
            ]
            await _send(request, headers, b"" if request.method == "HEAD" else AVATAR_PNG)
            return
        match = NAME.match(name)
        if match is None or match.group(1).lower() not in STORED_TYPES:
            raise NotFound("No such media file.", code="media_not_found")
        await send_stored(request, gw.storage, name, match.group(1))

    return [
        Endpoint(method, "/media/{name}", serve, auth="none", style="plain") for method in ("GET", "HEAD")
    ]
