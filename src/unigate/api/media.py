"""Media the gateway stores and serves itself (sandbox results, uploads): `GET /media/{name}`.
Names are unguessable (they embed random ids), so links work in players without headers."""

from __future__ import annotations

import asyncio
import re

from unigate.asgi import Request, send_body
from unigate.auth.principal import Principal
from unigate.endpoints import Endpoint
from unigate.errors import NotFound
from unigate.gateway import Gateway

_NAME = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9]+)$")
TYPES = {
    ".wav": b"audio/wav",
    ".mp3": b"audio/mpeg",
    ".png": b"image/png",
    ".jpg": b"image/jpeg",
    ".webp": b"image/webp",
    ".mp4": b"video/mp4",
}


def endpoints(gw: Gateway) -> list[Endpoint]:
    root = gw.settings.data_dir / "media"

    async def serve(request: Request, _: Principal | None) -> None:
        name = request.params["name"]
        match = _NAME.match(name)
        content_type = TYPES.get(match.group(1).lower()) if match else None
        path = root / name
        if content_type is None or not path.is_file():
            raise NotFound("No such media file.", code="media_not_found")
        data = await asyncio.to_thread(path.read_bytes)
        await send_body(request.send, 200, data, content_type, [(b"cache-control", b"public, max-age=86400")])

    return [Endpoint("GET", "/media/{name}", serve, auth="none", style="plain")]
