"""The API description and its viewer: `GET /openapi.json` (built once, on first request, from
the endpoint table), `GET /docs` (Swagger UI) and `GET /docs/assets/{name}` (Swagger UI's files,
vendored in the package by scripts/vendor-assets.sh, and the page's initializer). No CDN is
involved, and the page runs no inline script, so it is sent with a strict CSP."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from unigate.edge.asgi import Request, send_body
from unigate.edge.endpoints import Endpoint
from unigate.errors import NotFound

if TYPE_CHECKING:
    from unigate.openapi.builder import OpenAPIDocument

if TYPE_CHECKING:
    from unigate.openapi.builder import OpenAPIDocument

WEB = Path(__file__).resolve().parents[2] / "web"  # src/unigate/web
SWAGGER = WEB / "vendor" / "swagger-ui-dist"
STATIC = WEB / "static"
# The files /docs/assets/ serves: name -> (path, content type). Nothing else is reachable.
ASSETS = {
    "swagger-ui-bundle.js": (SWAGGER / "swagger-ui-bundle.js", b"text/javascript; charset=utf-8"),
    "swagger-ui.css": (SWAGGER / "swagger-ui.css", b"text/css; charset=utf-8"),
    "docs.js": (STATIC / "docs.js", b"text/javascript; charset=utf-8"),
}
# Swagger UI draws its icons from data: images and sets styles through the DOM; nothing else
# is allowed: no inline script, no other origin, no framing.
CSP = (
    b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_NOSNIFF = (b"x-content-type-options", b"nosniff")
# Asset URLs carry a version (`?v=`), so a changed file has a new URL and can be cached for long.
_IMMUTABLE = (b"cache-control", b"public, max-age=31536000, immutable")


class DocsAPI:
    def __init__(self, endpoints: Callable[[], Iterable[Endpoint]]) -> None:
        self._endpoints = endpoints
        self._document: OpenAPIDocument | None = None
        self._page: bytes | None = None

    @property
    def document(self) -> OpenAPIDocument:
        # Imported on first use: the schema modules (~3,000 lines) cost every worker memory
        # for a document most of them never serve.
        if self._document is None:
            from unigate.openapi.builder import OpenAPIDocument

            self._document = OpenAPIDocument(self._endpoints)
        return self._document

    async def openapi(self, request: Request) -> None:
        await send_body(
            request.send, 200, self.document.json(), extra=[_NOSNIFF, (b"cache-control", b"no-cache")]
        )

    async def docs(self, request: Request) -> None:
        if self._page is None:
            self._page = await asyncio.to_thread(_page)
        headers = [
            (b"content-security-policy", CSP),
            _NOSNIFF,
            (b"referrer-policy", b"no-referrer"),
            (b"x-frame-options", b"DENY"),
            (b"cache-control", b"no-cache"),
        ]
        await send_body(request.send, 200, self._page, b"text/html; charset=utf-8", headers)

    async def asset(self, request: Request) -> None:
        found = ASSETS.get(request.params["name"])
        if found is None:
            raise NotFound("No such file.", code="not_found")
        path, content_type = found
        # Read per request rather than held: Swagger UI's bundle is 1.7 MB that most workers
        # never serve, and the OS page cache keeps it warm for those that do.
        data = await asyncio.to_thread(path.read_bytes)
        await send_body(request.send, 200, data, content_type, [_NOSNIFF, _IMMUTABLE])


def _page() -> bytes:
    """The page, its asset URLs versioned: Swagger UI's by its vendored version, the
    initializer by its content."""
    swagger = SWAGGER.joinpath("VERSION").read_text().strip().rpartition("@")[2]
    init = hashlib.sha256(STATIC.joinpath("docs.js").read_bytes()).hexdigest()[:12]
    html = STATIC.joinpath("docs.html").read_text()
    return html.replace("{swagger}", swagger).replace("{init}", init).encode()


def endpoints(table: Callable[[], Iterable[Endpoint]]) -> list[Endpoint]:
    """`table` gives the app's endpoints when the document is first asked for."""
    api = DocsAPI(table)
    return [
        Endpoint("GET", "/openapi.json", api.openapi, auth="none", style="plain"),
        Endpoint("GET", "/docs", api.docs, auth="none", style="plain"),
        Endpoint("GET", "/docs/assets/{name}", api.asset, auth="none", style="plain"),
    ]
