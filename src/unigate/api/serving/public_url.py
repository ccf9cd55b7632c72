"""The gateway's own base URL, for the links it hands out to files it serves (`/media/…`,
task downloads, Veo file URIs). It comes from configuration - `public_url` in the config file,
or `UNIGATE_PUBLIC_URL`, which wins - or, when neither is set, from the address the server is
actually bound to (ASGI `scope["server"]`). Never from the request's `Host` header: a client
could otherwise make the gateway store links to a host of its choosing (`Host: evil.example`),
which every later reader of that task - and its webhooks - would follow."""

from __future__ import annotations

from unigate.edge.asgi import Request
from unigate.gateway import Gateway

_DEFAULT_PORTS = {"http": 80, "https": 443}


def configured_base(gw: Gateway) -> str:
    """The configured public URL (validated at start-up, trailing slash removed), or ""."""
    return gw.settings.public_url or gw.config.public_url or ""


def public_base(request: Request, configured: str) -> str:
    """`configured` when set; else scheme://address:port of the socket that took the request."""
    if configured:
        return configured
    scope = request.scope
    scheme = scope.get("scheme")
    scheme = scheme if scheme in _DEFAULT_PORTS else "http"
    server = scope.get("server")
    # No server address (a Unix socket has no port): loopback is the honest fallback.
    host, port = (str(server[0]), server[1]) if server and server[1] is not None else ("127.0.0.1", None)
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{int(port)}"
