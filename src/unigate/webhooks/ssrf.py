"""SSRF guard for outbound URLs given by users (notify_hook, and any "fetch this URL").

Two layers:

* `check_url` — static checks on the parsed URL object that will be dialled (scheme, userinfo,
  host, port, control characters), plus a refusal of hosts that are private by name or are IP
  literals. aiohttp never calls the resolver for IP literals, so literals must be refused here.
* `GuardedResolver` — aiohttp resolver that refuses a name if *any* address it resolves to is not
  public. aiohttp connects to exactly the addresses the resolver returns, so the address checked
  is the address dialled: a TTL-0 DNS rebind between check and connect cannot slip through.

`is_public_address` does not trust `ip.is_global` alone: on CPython < 3.12.4 it is wrong for
multicast, IPv4-mapped IPv6 and several special ranges (CVE-2024-4032, cpython #119812).
Note: on 3.11 the NAT64 prefix 64:ff9b::/96 counts as reserved, so NAT64 targets are refused
(fail closed); an IPv6-only/DNS64 deployment would need `allow_private` or a newer Python.
"""

from __future__ import annotations

import ipaddress
import socket
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

IPAddress = IPv4Address | IPv6Address

MAX_URL_LENGTH = 2048
ALLOWED_SCHEMES = frozenset({"http", "https"})

# Names refused before any lookup (defence in depth: their addresses are refused anyway).
_BLOCKED_NAMES = frozenset({"localhost", "metadata", "metadata.google.internal", "instance-data"})
_BLOCKED_SUFFIXES = (".localhost", ".internal", ".local", ".localdomain", ".home.arpa")

# Tuples: immutable module state only.
_V4_BLOCKED: tuple[IPv4Network, ...] = tuple(
    IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network"; 0.0.0.0 reaches localhost on Linux
        "10.0.0.0/8",
        "100.64.0.0/10",  # CGNAT
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, cloud metadata 169.254.169.254
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # TEST-NET-1
        "192.88.99.0/24",  # 6to4 relay anycast (deprecated)
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # TEST-NET-2
        "203.0.113.0/24",  # TEST-NET-3
        "224.0.0.0/4",  # multicast (is_global is True for it on 3.11)
        "240.0.0.0/4",  # reserved, includes 255.255.255.255
    )
)
_V6_BLOCKED: tuple[IPv6Network, ...] = tuple(
    IPv6Network(n)
    for n in (
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",  # discard-only
        "2001:db8::/32",  # documentation
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
)
_V4_COMPAT = IPv6Network("::/96")  # IPv4-compatible (deprecated); also covers :: and ::1
_NAT64 = IPv6Network("64:ff9b::/96")


class UnsafeURL(ValueError):
    """The URL may not be fetched. The message is a short reason, safe to show to the user."""


class RefusedAddress(OSError):
    """Raised by `GuardedResolver`. An OSError so aiohttp reports it as a connection (DNS) error
    (`ClientConnectorDNSError` with this as `os_error`) without dialling anything. The message
    names the host and the address refused: for the operator's log, never for a client."""


def _embedded_ipv4(ip: IPv6Address) -> tuple[IPv4Address | None, bool]:
    """(embedded IPv4, whether the IPv6 address *is* that IPv4 on the wire)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, True
    if ip in _V4_COMPAT:
        return IPv4Address(int(ip) & 0xFFFFFFFF), True
    if ip.sixtofour is not None:
        return ip.sixtofour, False
    if ip.teredo is not None:
        return ip.teredo[1], False  # client address, already de-obfuscated by ipaddress
    if ip in _NAT64:
        return IPv4Address(int(ip) & 0xFFFFFFFF), False
    return None, False


def is_public_address(ip: IPAddress) -> bool:
    """True only for globally routable unicast addresses."""
    if isinstance(ip, IPv6Address):
        if ip.scope_id:
            return False  # a zone id only makes sense for link-local targets
        embedded, same = _embedded_ipv4(ip)
        if embedded is not None:
            if same:
                return is_public_address(embedded)
            if not is_public_address(embedded):
                return False  # 6to4 / Teredo / NAT64 wrapping a private IPv4
        if any(ip in net for net in _V6_BLOCKED):
            return False
    elif any(ip in net for net in _V4_BLOCKED):
        return False
    if not ip.is_global:
        return False
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


def literal_address(host: str) -> IPAddress | None:
    """The address a host string denotes without DNS, as the OS would read it, or None.

    Besides dotted quads and IPv6 this covers the legacy numeric forms `getaddrinfo` accepts
    (`127.1`, `0x7f000001`, `2130706433`, `017700000001`), parsed locally with inet_aton.
    """
    h = host.strip("[]").rstrip(".")
    h = h.split("%", 1)[0]  # IPv6 zone id ("%25eth0" in a URL) does not change the class
    try:
        return ipaddress.ip_address(h)
    except ValueError:
        pass
    if h and ":" not in h and all(c in "0123456789abcdefxABCDEFX." for c in h):
        try:
            return IPv4Address(socket.inet_aton(h))
        except OSError:
            return None
    return None


PRIVATE_HINT = (
    "loopback, private and link-local addresses are refused; for local testing allow them with "
    "UNIGATE_ALLOW_PRIVATE_WEBHOOKS=1 or tasks.allow_private_webhooks: true"
)
# Every refusal of a host gives clients this one reason, whether the URL names a blocked host, a
# non-public address, or (at connect time) a name whose addresses are not public: a message that
# said which would tell a client what an internal name resolves to.
HOST_REFUSED = "host is not allowed"


def refusal(exc: Exception) -> str:
    """Why a URL was refused, for the client: with how to allow private addresses when the host
    was the reason."""
    reason = str(exc)
    if reason == HOST_REFUSED:
        return f"{reason} ({PRIVATE_HINT})"
    return reason


def check_host(host: str) -> None:
    """Refuse hosts that are private by name or literal non-public addresses (no DNS here)."""
    name = host.strip("[]").rstrip(".").lower()
    if not name:
        raise UnsafeURL("host is missing")
    if name in _BLOCKED_NAMES or name.endswith(_BLOCKED_SUFFIXES):
        raise UnsafeURL(HOST_REFUSED)
    ip = literal_address(host)
    if ip is not None and not is_public_address(ip):
        raise UnsafeURL(HOST_REFUSED)


def check_url(url: str, *, allow_private: bool = False) -> URL:
    """Parse and statically check `url`; return the yarl URL to dial (never re-parse the string).

    With `allow_private=True` (operator opt-in) only the shape checks run. DNS answers are
    checked later, at connect time, by `GuardedResolver`.
    """
    if not isinstance(url, str) or not url:
        raise UnsafeURL("URL is empty")
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeURL("URL is too long")
    # CR/LF would allow header injection; whitespace and backslashes invite parser differentials.
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F or c == "\\" for c in url):
        raise UnsafeURL("URL contains whitespace or control characters")
    try:
        parsed = URL(url)
        port = parsed.port
    except (ValueError, TypeError):
        raise UnsafeURL("URL is not valid") from None
    if parsed.scheme not in ALLOWED_SCHEMES:
        raise UnsafeURL("scheme is not allowed")
    if not parsed.is_absolute() or not parsed.raw_host:
        raise UnsafeURL("host is missing")
    if parsed.raw_user is not None or parsed.raw_password is not None or "@" in parsed.raw_authority:
        raise UnsafeURL("credentials in URL are not allowed")
    if not port:
        raise UnsafeURL("port is not allowed")
    if not allow_private:
        check_host(parsed.raw_host)
    return parsed


class GuardedResolver(AbstractResolver):
    """Resolver for the webhook connector: refuses the whole answer if any address is not public.

    `inner` is the real resolver (aiohttp's default, created lazily because `ThreadedResolver`
    needs a running loop); tests inject one that returns chosen addresses.
    """

    def __init__(self, allow_private: bool = False, inner: AbstractResolver | None = None) -> None:
        self.allow_private = allow_private
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if not self.allow_private:
            try:
                check_host(host)  # refuse by name / literal before asking DNS at all
            except UnsafeURL as exc:
                raise RefusedAddress(f"{host}: {exc}") from None
        if self._inner is None:
            self._inner = DefaultResolver()
        results = await self._inner.resolve(host, port, family)
        if not self.allow_private:
            for result in results:
                ip = literal_address(result["host"])
                # Unparseable answers fail closed.
                if ip is None or not is_public_address(ip):
                    shown = result["host"][:64]
                    raise RefusedAddress(f"{host} resolves to {shown}, which is not a public address")
        return results

    async def close(self) -> None:
        if self._inner is not None:
            await self._inner.close()
