"""Liveness and readiness."""

from __future__ import annotations

from unigate.asgi import Request, send_json
from unigate.auth.principal import Principal
from unigate.endpoints import Endpoint
from unigate.gateway import Gateway
from unigate.store.db import ping


def endpoints(gw: Gateway) -> list[Endpoint]:
    async def healthz(request: Request, _: Principal | None) -> None:
        await send_json(request.send, 200, {"status": "ok"})

    async def readyz(request: Request, _: Principal | None) -> None:
        try:
            async with gw.engine.connect() as conn:
                await ping(conn)
        except Exception:
            await send_json(request.send, 503, {"status": "unavailable", "database": "unreachable"})
            return
        await send_json(request.send, 200, {"status": "ready", "database": "ok"})

    return [
        Endpoint("GET", "/healthz", healthz, auth="none"),
        Endpoint("GET", "/readyz", readyz, auth="none"),
    ]
