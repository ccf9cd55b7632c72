"""Media the gateway stores and serves itself (sandbox results, uploads): `GET /media/{name}`.
Names are unguessable (they embed random ids), so links work in players without headers."""

from __future__ import annotations

import asyncio
import base64
import re

from unigate.asgi import Request, send_body
from unigate.auth.principal import Principal
from unigate.endpoints import Endpoint
from unigate.errors import NotFound
from unigate.gateway import Gateway
from unigate.music.record import AVATAR_NAME

_CACHE = [(b"cache-control", b"public, max-age=86400")]
_NAME = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9]+)$")
TYPES = {
    ".wav": b"audio/wav",
    ".mp3": b"audio/mpeg",
    ".png": b"image/png",
    ".jpg": b"image/jpeg",
    ".webp": b"image/webp",
    ".mp4": b"video/mp4",
    ".jpeg": b"image/jpeg",
    ".ogg": b"audio/ogg",
    ".txt": b"text/plain; charset=utf-8",
    ".pdf": b"application/pdf",
}


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


def endpoints(gw: Gateway) -> list[Endpoint]:
    root = gw.settings.data_dir / "media"

    async def serve(request: Request, _: Principal | None) -> None:
        name = request.params["name"]
        if name == AVATAR_NAME:
            await send_body(
                request.send, 200, AVATAR_PNG, b"image/png", [(b"cache-control", b"public, max-age=86400")]
            )
            return
        match = _NAME.match(name)
        content_type = TYPES.get(match.group(1).lower()) if match else None
        path = root / name
        if content_type is None or not path.is_file():
            raise NotFound("No such media file.", code="media_not_found")
        data = await asyncio.to_thread(path.read_bytes)
        await send_body(request.send, 200, data, content_type, _CACHE)

    return [Endpoint("GET", "/media/{name}", serve, auth="none", style="plain")]
