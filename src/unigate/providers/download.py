"""Downloading a provider's file by URL, across redirects, with the provider's credentials
sent to the provider's own origin only.

Wire: `GET <url>` over HTTP/1.1 (transport/, through `UpstreamHTTP`). An answer 301, 302, 303,
307 or 308 with a `Location` is followed (relative locations resolved against the URL that
answered), at most `MAX_REDIRECTS` times. A URL under the provider's base URL (same scheme,
host, port and base path) goes through the provider's own pool, whose headers carry its key;
any other origin - typically the storage host a file link redirects to - goes through a pool
that sends no provider header at all, so the key never reaches it. Only http(s) URLs are
fetched. The final answer is handed back with its body unread, whatever its status.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit

from unigate.providers.base import RouteFailed, Timeouts
from unigate.providers.body_stream import relay_bytes
from unigate.providers.http import UpstreamHTTP
from unigate.transport.pool import Origin
from unigate.transport.response import Response

MAX_REDIRECTS = 3
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CACHED_ORIGINS = 4  # storage origins kept warm per provider; a provider redirects to one or two
# Characters a request target may carry as they are; anything else is percent-encoded, so a
# vendor's Location can never inject into the request line.
_TARGET_SAFE = "/%:@!$&'()*+,;=-._~?"


class DownloadPools:
    """Connection pools for the origins downloads are redirected to, a few kept for reuse.

    When the cache is full a new origin gets a one-off pool that the download closes once its
    body is read: evicting a cached pool could cut a download still streaming from it."""

    def __init__(self, limit: int = CACHED_ORIGINS) -> None:
        self._limit = limit
        self._pools: dict[str, UpstreamHTTP] = {}

    def lease(self, origin: str) -> tuple[UpstreamHTTP, bool]:
        """(pool, owned): `owned` pools are the caller's to close."""
        pool = self._pools.get(origin)
        if pool is not None:
            return pool, False
        # No provider headers here: only the client's own defaults (identity encoding, agent).
        pool = UpstreamHTTP(origin, {})
        if len(self._pools) >= self._limit:
            return pool, True
        self._pools[origin] = pool
        return pool, False

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()


@dataclass(slots=True)
class Download:
    """The final answer of a download; its body is still to be read (`stream`) or dropped
    (`close`)."""

    response: Response
    owned: UpstreamHTTP | None = None  # a one-off pool, closed once the body is read

    async def stream(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in relay_bytes(self.response):
                yield chunk
        finally:
            await self.discard()

    def close(self) -> None:
        """Drop the connection now (the client went away); an unread body aborts it."""
        self.response.release()

    async def discard(self) -> None:
        self.response.release()
        if self.owned is not None:
            owned, self.owned = self.owned, None
            await owned.aclose()


async def fetch(
    url: str, home: UpstreamHTTP, home_base: str, pools: DownloadPools, timeouts: Timeouts
) -> Download:
    """GET `url`, following redirects; `home` is the provider's pool for `home_base`."""
    home_origin = Origin.parse(home_base)
    for _ in range(MAX_REDIRECTS + 1):
        origin, target = _split(url)
        under_home = _under(origin, target, home_origin)
        owned: UpstreamHTTP | None = None
        if under_home is not None:
            resp = await home.get(under_home, timeouts, redirects=True)
        else:
            pool, is_owned = pools.lease(origin)
            owned = pool if is_owned else None
            try:
                resp = await pool.get(target, timeouts, redirects=True)
            except BaseException:
                if owned is not None:
                    await owned.aclose()
                raise
        download = Download(resp, owned)
        location = resp.headers.get("Location")
        if resp.status not in REDIRECTS or not location:
            return download
        await download.discard()
        url = urljoin(url, location.strip())
    raise RouteFailed(f"The upstream's file link redirected more than {MAX_REDIRECTS} times.")


def _split(url: str) -> tuple[str, str]:
    """("scheme://host[:port]", "/path?query") of an http(s) URL; anything else is refused."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise RouteFailed("The upstream's file link is not a valid URL.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username is not None:
        raise RouteFailed("The upstream's file link is not an http(s) URL.")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    origin = f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return origin, quote(target, safe=_TARGET_SAFE)


def _under(origin: str, target: str, home: Origin) -> str | None:
    """`target` relative to the provider's base path when `origin` is the provider's own
    origin and the path lies under that base; else None (not the provider's: no key)."""
    parsed = Origin.parse(origin)
    if (parsed.scheme, parsed.host.lower(), parsed.port) != (home.scheme, home.host.lower(), home.port):
        return None
    base = home.base_path
    if not base:
        return target
    if target == base or target.startswith((base + "/", base + "?")):
        return target[len(base) :]  # the pool puts the base path back in front
    return None
