"""`POST /admin/providers/check` (admin key): one cheap request through each provider of the
running configuration, each failure explained with its fix (providers/check.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.providers.check import check_all

if TYPE_CHECKING:
    from unigate.gateway import Gateway


def endpoints(gw: Gateway) -> list[Endpoint]:
    async def check(request: Request) -> None:
        results = await check_all(gw.providers.values())
        data = [r.as_json() for r in results]
        await send_json(request.send, 200, {"object": "list", "data": data})

    return [Endpoint("POST", "/admin/providers/check", check, auth="admin")]
