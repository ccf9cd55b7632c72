"""`GET /metrics`: the Prometheus text format, the same on every worker of a serve (all
workers' values merged, observability/scrape.py). The edge authenticates it (auth kind
"metrics"): the admin key, or UNIGATE_METRICS_TOKEN, as `Authorization: Bearer …`."""

from __future__ import annotations

from unigate.edge.asgi import Request, send_body
from unigate.edge.endpoints import Endpoint
from unigate.gateway import Gateway
from unigate.observability.scrape import exposition


def endpoints(gw: Gateway) -> list[Endpoint]:
    async def metrics(request: Request) -> None:
        body, content_type = await exposition(gw.metrics.directory, gw.engine)
        extra = [(b"cache-control", b"no-store"), (b"x-request-id", request.request_id.encode())]
        await send_body(request.send, 200, body, content_type.encode(), extra)

    return [Endpoint("GET", "/metrics", metrics, auth="metrics")]
