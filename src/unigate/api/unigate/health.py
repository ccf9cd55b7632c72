"""Liveness and readiness (observability/readiness.py: what each dependency's state does to it)."""

from __future__ import annotations

from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.gateway import Gateway
from unigate.observability.readiness import Readiness


def endpoints(gw: Gateway) -> list[Endpoint]:
    async def healthz(request: Request) -> None:
        await send_json(request.send, 200, {"status": "ok"})

    readiness = Readiness(gw.engine, gw.redis)

    async def readyz(request: Request) -> None:
        status, body = await readiness.report()
        await send_json(request.send, status, body)

    return [
        Endpoint("GET", "/healthz", healthz, auth="none"),
        Endpoint("GET", "/readyz", readyz, auth="none"),
    ]
