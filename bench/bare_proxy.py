"""The floor unigate is measured against: uvicorn (uvloop + httptools) + a raw ASGI app + one
pooled aiohttp session, relaying every request to the upstream unchanged.

No auth, no routing, no limits, no accounting: whatever unigate costs on top of this is the
price of being a gateway. The request path is appended to the upstream's address, so
`/stream/v1/chat/completions` reaches the fake upstream's streaming reply. SSE responses are
relayed chunk by chunk as they arrive; anything else is read whole and sent with its length.

Run as a script: `python bench/bare_proxy.py --port 8081 --upstream http://127.0.0.1:8080
[--workers 2]` (as many workers as unigate runs, so the comparison is like for like).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import aiohttp
import uvicorn

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_FORWARDED = (b"content-type", b"authorization")


class BareProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.session: aiohttp.ClientSession | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._relay(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30)
                self.session = aiohttp.ClientSession(
                    connector=connector,
                    auto_decompress=False,
                    skip_auto_headers=("Accept-Encoding", "User-Agent"),
                )
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.session is not None:
                    await self.session.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _relay(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.session is not None
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {k.decode(): v.decode() for k, v in scope["headers"] if k in _FORWARDED}
        url = self.upstream + scope["path"]
        async with self.session.post(url, data=body, headers=headers) as resp:
            content_type = resp.headers.get("Content-Type", "application/json").encode()
            if content_type.startswith(b"text/event-stream"):
                start_headers = [(b"content-type", content_type)]
                await send({"type": "http.response.start", "status": resp.status, "headers": start_headers})
                async for chunk in resp.content.iter_any():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
                return
            data = await resp.read()
        start_headers = [(b"content-type", content_type), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": resp.status, "headers": start_headers})
        await send({"type": "http.response.body", "body": data})


_UPSTREAM_ENV = "BARE_PROXY_UPSTREAM"


def app() -> BareProxy:
    """The workers' factory (several workers need an import string): upstream from the environment."""
    return BareProxy(os.environ[_UPSTREAM_ENV])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="Upstream origin, e.g. http://127.0.0.1:8080")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    os.environ[_UPSTREAM_ENV] = args.upstream
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    uvicorn.run(
        "bare_proxy:app",
        factory=True,
        host="127.0.0.1",
        port=args.port,
        workers=args.workers,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
        lifespan="on",
        timeout_keep_alive=30,
    )


if __name__ == "__main__":
    main()
