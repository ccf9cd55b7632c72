"""SSRF guard for outbound URLs given by users (notify_hook, and any "fetch this URL").

Two layers:

* `check_url` — static checks on the parsed URL that will be dialled (scheme, userinfo, host,
  port, control characters), plus a refusal of hosts that are private by name or are IP
  literals; it returns the `Target` the sender dials, so the string is never parsed twice.
* `GuardedResolver` — the resolver of the webhook dialer (the project's HTTP client,
  `transport/dial.py`), which refuses a name if *any* address it resolves to is not public, and
  an IP literal by the same rule. The dialer connects to exactly the addresses the resolver
  returns, so the address checked is the address dialled: a TTL-0 DNS rebind between check and
  connect cannot slip through. It resolves every connection afresh (no cache).

`is_public_address` does not trust `ip.is_global` alone: on CPython < 3.12.4 it is wrong for
multicast, IPv4-mapped IPv6 and several special ranges (CVE-2024-4032, cpython #119812).
Note: on 3.11 the NAT64 prefix 64:ff9b::/96 counts as reserved, so NAT64 targets are refused
(fail closed); an IPv6-only/DNS64 deployment would need `allow_private` or a newer Python.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import Protocol
from urllib.parse import quote, urlsplit

from unigate.transport.dial import Resolver

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
    """Raised by `GuardedResolver` before anything is dialled. The message names the host and
    the address refused: for the operator's log, never for a client."""


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
            # 6to4 reaches its IPv4 through a relay, so that address decides it as well: Python's
            # own table for 2002::/16 differs between 3.11 patch releases (private on 3.11.2).
            if same or ip.sixtofour is not None:
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


Addresses = list[tuple[int, tuple[str, int]]]  # (family, (address, port)), as the dialer takes them
# A host name as it goes to DNS and the Host header, once IDNA-encoded: anything else (a
# percent-escape, a character some resolver reads differently) is refused rather than guessed.
_HOST_NAME = re.compile(r"[a-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class Target:
    """A checked URL, as the sender dials it."""

    scheme: str
    raw_host: str  # lower case, IDNA-encoded; an IPv6 literal without brackets
    port: int  # the URL's, or the scheme's default
    path: str  # the request target: path and query, ASCII

    @property
    def origin(self) -> str:
        host = f"[{self.raw_host}]" if ":" in self.raw_host else self.raw_host
        return f"{self.scheme}://{host}:{self.port}"


def check_url(url: str, *, allow_private: bool = False) -> Target:
    """Parse and statically check `url`; return the `Target` to dial (never re-parse the string).

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
        parsed = urlsplit(url)
        port = parsed.port
        scheme = parsed.scheme.lower()
    except (ValueError, TypeError):
        raise UnsafeURL("URL is not valid") from None
    if scheme not in ALLOWED_SCHEMES:
        raise UnsafeURL("scheme is not allowed")
    netloc = parsed.netloc
    if not netloc or not parsed.hostname:
        raise UnsafeURL("host is missing")
    if parsed.username is not None or parsed.password is not None or "@" in netloc:
        raise UnsafeURL("credentials in URL are not allowed")
    if port is None:
        port = 443 if scheme == "https" else 80
    elif not port:
        raise UnsafeURL("port is not allowed")
    host = _host(netloc, parsed.hostname)
    if not allow_private:
        check_host(host)
    path = parsed.path or "/"
    if parsed.query:
        path = f"{path}?{parsed.query}"
    if not path.isascii():
        path = quote(path, safe="".join(chr(c) for c in range(0x21, 0x7F)))  # non-ASCII escaped
    return Target(scheme, host, port, path)


def _host(netloc: str, hostname: str) -> str:
    """The host to dial: an IPv6 literal as given (zone id included), a name IDNA-encoded."""
    if netloc.lstrip().startswith("[") or netloc.rpartition("@")[2].startswith("["):
        return hostname  # urlsplit checked the brackets; check_host reads the address
    try:
        name = hostname.encode("idna").decode("ascii") if not hostname.isascii() else hostname
    except UnicodeError:
        raise UnsafeURL("URL is not valid") from None
    if not _HOST_NAME.fullmatch(name.lower()):
        raise UnsafeURL("URL is not valid")
    return name.lower()


class AddressResolver(Protocol):
    """What `GuardedResolver` asks for a name's addresses (the transport's `Resolver`; tests
    give a table)."""

    async def resolve(self, host: str, port: int) -> Addresses: ...


class GuardedResolver(Resolver):
    """Resolver for the webhook dialer: refuses the whole answer if any address is not public.

    `inner` answers the lookups (the transport's resolver without a cache, by default); tests
    inject one that returns chosen addresses.
    """

    def __init__(self, allow_private: bool = False, inner: AddressResolver | None = None) -> None:
        super().__init__(ttl=0.0)
        self.allow_private = allow_private
        self._inner: AddressResolver = inner if inner is not None else Resolver(ttl=0.0)

    async def resolve(self, host: str, port: int) -> Addresses:
        if not self.allow_private:
            try:
                check_host(host)  # refuse by name / literal before asking DNS at all
            except UnsafeURL as exc:
                raise RefusedAddress(f"{host}: {exc}") from None
        results = await self._inner.resolve(host, port)
        if not self.allow_private:
            for _, (address, _port) in results:
                ip = literal_address(address)
                # Unparseable answers fail closed.
                if ip is None or not is_public_address(ip):
                    shown = address[:64]
                    raise RefusedAddress(f"{host} resolves to {shown}, which is not a public address")
        return results

    async def close(self) -> None:
        return None
