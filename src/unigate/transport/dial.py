"""Opening a connection to an upstream: DNS through a short cache, Happy Eyeballs over the
addresses (RFC 8305: IPv6 and IPv4 interleaved, the next attempt started 250 ms after the
previous one unless it failed sooner), an HTTP proxy's CONNECT tunnel when one applies, then
TLS with the provider's extra CA and client certificate.

Only new connections come through here; a request on a pooled connection never does. The
socket is connected by hand (uvloop's create_connection has no Happy Eyeballs) and handed to
`create_connection(sock=...)`, which adds TLS and the protocol.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import ipaddress
import os
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import unquote, urlsplit

from unigate.transport.errors import ConnectFailed, LocalExhausted, UpstreamError

P = TypeVar("P", bound=asyncio.BaseProtocol)

HAPPY_EYEBALLS_DELAY = 0.25  # seconds before the next address is tried alongside
DNS_TTL = 10.0  # seconds a resolution is reused: short, so failover by DNS still works
DNS_CACHE_SIZE = 1024
# The gateway itself is out of sockets, file descriptors, ports or memory: not the upstream's fault.
LOCAL_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.EADDRNOTAVAIL})


@dataclass(frozen=True, slots=True)
class Proxy:
    host: str
    port: int
    authorization: str | None  # Proxy-Authorization value, from the URL's user:password

    @classmethod
    def parse(cls, url: str) -> Proxy:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"a proxy must be an http:// URL (CONNECT for https upstreams), not {url!r}")
        auth = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            auth = "Basic " + base64.b64encode(pair).decode()
        return cls(parts.hostname, parts.port or 80, auth)


def proxy_for(scheme: str, host: str, configured: str | None) -> Proxy | None:
    """The proxy to reach `scheme://host`: the provider's `proxy` ("direct" for none), else
    HTTPS_PROXY / HTTP_PROXY from the environment unless NO_PROXY covers the host."""
    if configured is not None:
        return None if configured == "direct" else Proxy.parse(configured)
    env = environment_proxies()
    url = env.get(scheme)
    if not url or bypassed(host, env.get("no", "")):
        return None
    return Proxy.parse(url)


def environment_proxies() -> dict[str, str]:
    """Scheme (and `no`) -> value of the environment's `<scheme>_proxy` variables, read as the
    standard library's `urllib.request.getproxies_environment` reads them (not imported: with
    http.client and email's parser it is ~0.5 MB in every worker): either case, the name
    written `_proxy` in lower case winning and unsetting when empty; under CGI
    (`REQUEST_METHOD` set) an upper-case HTTP_PROXY is ignored, as a client's `Proxy:`
    header may have set it."""
    found: dict[str, str] = {}
    for name, value in os.environ.items():
        if value and name.lower().endswith("_proxy"):
            found[name[:-6].lower()] = value
    if "REQUEST_METHOD" in os.environ:
        found.pop("http", None)
    for name, value in os.environ.items():
        if name.endswith("_proxy"):
            if value:
                found[name[:-6].lower()] = value
            else:
                found.pop(name[:-6].lower(), None)
    return found


def bypassed(host: str, no_proxy: str) -> bool:
    """NO_PROXY as curl reads it: `*`, host names matching exactly or as a domain suffix
    (`example.com` and `.example.com` both cover `api.example.com`), IPs and CIDR ranges."""
    host = host.lower().strip("[]")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        name = entry.lstrip(".").split(":", 1)[0]
        if host == name or host.endswith("." + name):
            return True
    return False


def tls_context(ca_file: str | None, client_cert: str | None, client_key: str | None) -> ssl.SSLContext:
    """Verification always on: `ca_file` adds to the system's trust store, never replaces it."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    if client_cert:
        context.load_cert_chain(client_cert, client_key or None)
    return context


class Resolver:
    """getaddrinfo with a short per-host cache, addresses interleaved by family."""

    def __init__(self, ttl: float = DNS_TTL) -> None:
        self.ttl = ttl
        self._cache: dict[tuple[str, int], tuple[float, list[tuple[int, tuple[str, int]]]]] = {}

    async def resolve(self, host: str, port: int) -> list[tuple[int, tuple[str, int]]]:
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            return [(socket.AF_INET6 if literal.version == 6 else socket.AF_INET, (host, port))]
        now = time.monotonic()
        hit = self._cache.get((host, port))
        if hit is not None and hit[0] > now:
            return hit[1]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ConnectFailed(
                f"could not resolve {host} ({exc.strerror or type(exc).__name__})", "dns"
            ) from None
        addrs = _interleave([(family, (str(addr[0]), int(addr[1]))) for family, *_, addr in infos])
        if len(self._cache) >= DNS_CACHE_SIZE:
            self._cache.clear()  # bounded; rebuilt on demand
        self._cache[(host, port)] = (now + self.ttl, addrs)
        return addrs


def _interleave(addrs: list[tuple[int, tuple[str, int]]]) -> list[tuple[int, tuple[str, int]]]:
    """First family first (the resolver's preference), then alternating (RFC 8305 §4)."""
    if not addrs:
        return addrs
    first = [a for a in addrs if a[0] == addrs[0][0]]
    other = [a for a in addrs if a[0] != addrs[0][0]]
    out: list[tuple[int, tuple[str, int]]] = []
    for i in range(max(len(first), len(other))):
        out.extend(group[i] for group in (first, other) if i < len(group))
    return out


async def happy_eyeballs(addrs: list[tuple[int, tuple[str, int]]], delay: float) -> socket.socket:
    """A connected socket to the first address that answers; the others are abandoned."""
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[socket.socket]] = set()
    errors: list[OSError] = []
    winner: socket.socket | None = None
    queue = list(addrs)
    try:
        while winner is None and (queue or pending):
            if queue:
                family, addr = queue.pop(0)
                pending.add(asyncio.ensure_future(_connect_one(loop, family, addr)))
            done, pending = await asyncio.wait(
                pending, timeout=delay if queue else None, return_when=asyncio.FIRST_COMPLETED
            )
            for task in done:
                exc = task.exception()
                if exc is None and winner is None:
                    winner = task.result()
                elif exc is None:
                    task.result().close()
                elif isinstance(exc, OSError):
                    errors.append(exc)
                else:
                    raise exc
    finally:
        for task in pending:
            task.cancel()
    if winner is not None:
        return winner
    local = next((e for e in errors if e.errno in LOCAL_ERRNOS), None)
    if local is not None:
        raise LocalExhausted(f"no local resources for a connection ({local.strerror})")
    reason = errors[-1].strerror if errors and errors[-1].strerror else "no address answered"
    raise ConnectFailed(f"could not connect to the upstream ({reason})")


async def _connect_one(loop: asyncio.AbstractEventLoop, family: int, addr: tuple[str, int]) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)  # EMFILE surfaces here, as an OSError
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await loop.sock_connect(sock, addr)
    except BaseException:
        sock.close()
        raise
    return sock


class Dialer:
    """How one provider's connections are opened (its proxy and TLS settings)."""

    def __init__(
        self,
        tls: ssl.SSLContext | None = None,
        proxy: Proxy | None = None,
        resolver: Resolver | None = None,
        delay: float = HAPPY_EYEBALLS_DELAY,
    ) -> None:
        self.tls = tls
        self.proxy = proxy
        self.resolver = resolver or Resolver()
        self.delay = delay

    async def open(self, scheme: str, host: str, port: int, factory: Callable[[], P]) -> P:
        """A connected protocol to `scheme://host:port` (the caller bounds the time)."""
        loop = asyncio.get_running_loop()
        proxy = self.proxy
        hop_host, hop_port = (proxy.host, proxy.port) if proxy else (host, port)
        sock = await happy_eyeballs(await self.resolver.resolve(hop_host, hop_port), self.delay)
        try:
            if proxy is not None and scheme == "https":
                await _tunnel(loop, sock, host, port, proxy)
            tls = None
            if scheme == "https":
                if self.tls is None:
                    self.tls = ssl.create_default_context()  # once: a context costs ~1 ms
                tls = self.tls
            _, protocol = await loop.create_connection(
                factory, sock=sock, ssl=tls, server_hostname=host if tls else None
            )
        except BaseException as exc:
            sock.close()
            if isinstance(exc, ssl.SSLError | ssl.CertificateError):
                failed = f"TLS with the upstream failed ({exc.__class__.__name__})"
                raise ConnectFailed(failed, "tls") from None
            if isinstance(exc, OSError) and not isinstance(exc, UpstreamError):
                raise ConnectFailed(f"could not connect to the upstream ({type(exc).__name__})") from None
            raise
        return protocol


async def _tunnel(
    loop: asyncio.AbstractEventLoop, sock: socket.socket, host: str, port: int, proxy: Proxy
) -> None:
    """CONNECT host:port through the proxy; the socket then carries the TLS to the upstream."""
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
    if proxy.authorization:
        head += f"Proxy-Authorization: {proxy.authorization}\r\n"
    await loop.sock_sendall(sock, (head + "\r\n").encode("latin-1"))
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = await loop.sock_recv(sock, 4096)
        if not chunk or len(answer) > 16 * 1024:
            raise ConnectFailed("the proxy closed the tunnel request without an answer", "proxy")
        answer += chunk
    status_line = answer.split(b"\r\n", 1)[0].decode("latin-1", "replace")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or parts[1] != "200":
        raise ConnectFailed(f"the proxy refused the tunnel ({status_line[:80]})", "proxy")
    if answer.index(b"\r\n\r\n") + 4 != len(answer):
        raise ConnectFailed("the proxy sent bytes after its tunnel answer", "proxy")
