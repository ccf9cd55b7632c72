"""The admin dashboard: `GET /dashboard` and its files under `/dashboard/...`.

The pages are static (web/static/dashboard/, with Preact, htm and Chart.js vendored in the
package by scripts/vendor-assets.sh); they hold no secret. The browser keeps the admin key the
user types in sessionStorage and sends it only as the `Authorization` header of its calls to
the admin API, never as a cookie, so no other site can make the browser act with it (no CSRF).
Every file is sent with a strict CSP (scripts only from this origin, none inline), no framing,
no sniffing and no referrer."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from unigate.edge.asgi import Request, send_body
from unigate.edge.endpoints import Endpoint
from unigate.errors import NotFound

WEB = Path(__file__).resolve().parents[2] / "web"  # src/unigate/web
STATIC = WEB / "static" / "dashboard"
# The vendored files the pages load, by the URL name they are served under.
VENDORED = {
    "vendor/preact.mjs": WEB / "vendor" / "preact" / "preact.mjs",
    "vendor/htm.mjs": WEB / "vendor" / "htm" / "htm.mjs",
    "vendor/chart.umd.min.js": WEB / "vendor" / "chart.js" / "chart.umd.min.js",
}
TYPES = {
    ".html": b"text/html; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".mjs": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".svg": b"image/svg+xml",
}
CSP = (
    b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    b"frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    # Revalidated on every load (cheap: 304 by ETag), so a new version shows at once.
    (b"cache-control", b"no-cache"),
]


class Dashboard:
    def __init__(self) -> None:
        # URL name -> file; fixed here, so no request can name any other file.
        self._files: dict[str, Path] = {
            p.name: p for p in sorted(STATIC.iterdir()) if p.is_file() and p.suffix in TYPES
        } if STATIC.is_dir() else {}  # fmt: skip
        self._files.update(VENDORED)
        self._loaded: dict[str, tuple[bytes, bytes]] = {}  # name -> (content, etag)

    async def page(self, request: Request) -> None:
        await self._send(request, "index.html")

    async def asset(self, request: Request) -> None:
        await self._send(request, request.params["name"])

    async def favicon(self, request: Request) -> None:
        """What browsers ask every site for: the dashboard's icon (not a 404 in the request log)."""
        await self._send(request, "icon.svg")

    async def _send(self, request: Request, name: str) -> None:
        path = self._files.get(name)
        if path is None:
            raise NotFound("No such file.", code="not_found")
        loaded = self._loaded.get(name)
        if loaded is None:
            data = await asyncio.to_thread(path.read_bytes)
            loaded = (data, f'"{hashlib.sha256(data).hexdigest()[:20]}"'.encode())
            self._loaded[name] = loaded
        data, etag = loaded
        headers = [*HEADERS, (b"etag", etag)]
        if request.header(b"if-none-match") == etag:
            await request.send({"type": "http.response.start", "status": 304, "headers": headers})
            await request.send({"type": "http.response.body", "body": b""})
            return
        await send_body(request.send, 200, data, TYPES[path.suffix], headers)


def endpoints() -> list[Endpoint]:
    board = Dashboard()
    return [
        Endpoint("GET", "/dashboard", board.page, auth="none", style="plain"),
        Endpoint("GET", "/dashboard/", board.page, auth="none", style="plain"),
        Endpoint("GET", "/favicon.ico", board.favicon, auth="none", style="plain"),
        Endpoint(
            "GET",
            "/dashboard/{name}",
            board.asset,
            auth="none",
            style="plain",
            # Any name, newlines too: one not served is the handler's 404, in plain style.
            param=r"(?:.|\n)+",
        ),
    ]
