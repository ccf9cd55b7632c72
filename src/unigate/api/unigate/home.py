"""`GET /`: where to go from the gateway's root. A browser (its Accept names text/html) gets a
small page linking the API description, the dashboard and the model list; any other client the
same links as JSON."""

from __future__ import annotations

import orjson

from unigate import __version__
from unigate.edge.asgi import Request, send_body
from unigate.edge.endpoints import Endpoint

LINKS = {
    "docs": "/docs",
    "openapi": "/openapi.json",
    "dashboard": "/dashboard",
    "models": "/v1/models",
    "health": "/healthz",
}
_JSON = orjson.dumps(
    {
        "object": "unigate",
        "version": __version__,
        "message": "unigate model gateway: OpenAI-format clients take this URL + /v1 as base URL.",
        "links": LINKS,
    }
)
_HTML = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>unigate</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem">
<h1>unigate {__version__}</h1>
<p>A model gateway. OpenAI-format clients take this URL followed by <code>/v1</code> as base URL;
Anthropic and Google GenAI clients take this URL itself.</p>
<ul>
<li><a href="/docs">/docs</a>: the API, described and tried in the browser</li>
<li><a href="/dashboard">/dashboard</a>: keys, usage and recent requests (admin key)</li>
<li><a href="/v1/models">/v1/models</a>: the models an API key may use (send the key as a Bearer token)</li>
<li><a href="/healthz">/healthz</a>: liveness</li>
</ul></body></html>
""".encode()
_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-cache"), (b"vary", b"accept")]
_PAGE_CSP = (
    b"content-security-policy",
    b"default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
)


async def home(request: Request) -> None:
    accept = request.header(b"accept") or b""
    if b"text/html" in accept:
        await send_body(request.send, 200, _HTML, b"text/html; charset=utf-8", [*_HEADERS, _PAGE_CSP])
    else:
        await send_body(request.send, 200, _JSON, extra=_HEADERS)


def endpoints() -> list[Endpoint]:
    return [Endpoint("GET", "/", home, auth="none", style="plain")]
