"""`unigate providers check` and `POST /admin/providers/check`: one cheap request through each
provider (its model list, `list_models`) and, when it fails, what failed and how to fix it:
DNS, connect, TLS, the key (401/403), the base URL (404, redirects), an answer that is not
the API's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from unigate.errors import GatewayError, UpstreamRejected
from unigate.providers.base import Provider, RouteFailed, Timeouts, Unsupported
from unigate.providers.discovery import SHOWN

CHECK_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Check:
    provider: str
    protocol: str
    base_url: str
    ok: bool | None  # None: the protocol has no request to check with
    problem: str = ""  # what failed
    fix: str = ""  # what to change
    models: tuple[str, ...] = ()

    def line(self) -> str:
        where = f" at {self.base_url}" if self.base_url else ""
        head = f"{self.provider} ({self.protocol}{where})"
        if self.protocol == "sandbox":
            return f"{head}: ok (offline: answers here, nothing to reach)"
        if self.ok is None:
            return f"{head}: not checked: {self.problem}"
        if not self.ok:
            return f"{head}: FAILED: {self.problem}; {self.fix}"
        shown = ", ".join(self.models[:SHOWN]) + (" …" if len(self.models) > SHOWN else "")
        return f"{head}: ok, {len(self.models)} models listed" + (f": {shown}" if shown else "")

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.provider,
            "protocol": self.protocol,
            "base_url": self.base_url,
            "ok": self.ok,
            "problem": self.problem or None,
            "fix": self.fix or None,
            "models": list(self.models),
        }


async def check_all(providers: Iterable[Provider], seconds: float = CHECK_SECONDS) -> list[Check]:
    return list(await asyncio.gather(*(check(p, seconds) for p in providers)))


async def check(provider: Provider, seconds: float = CHECK_SECONDS) -> Check:
    config = provider.config
    base = config.base_url or _default_base(provider)
    done = Check(provider.name, config.protocol, base, True)
    try:
        async with asyncio.timeout(seconds):
            models = await provider.list_models(Timeouts(seconds, seconds, seconds))
    except Unsupported:
        if config.protocol == "sandbox":
            return Check(provider.name, config.protocol, base, True, models=())
        return Check(
            provider.name, config.protocol, base, None, "this protocol has no request that lists models; "
            "send a call to one of its models to check it"
        )  # fmt: skip
    except TimeoutError:
        return _failed(done, f"no answer within {seconds:g} s", _reach_fix(base))
    except RouteFailed as exc:
        return _diagnose(done, exc.cause, exc.upstream_status, exc.message)
    except UpstreamRejected as exc:
        return _diagnose(done, "answer", exc.status, exc.message)
    except GatewayError as exc:
        return _failed(done, exc.message, "retry; if it persists, check the gateway's own resources")
    return Check(provider.name, config.protocol, base, True, models=tuple(models))


def _diagnose(done: Check, cause: str, status: int | None, message: str) -> Check:
    host = urlsplit(done.base_url).hostname or done.base_url
    if cause == "dns":
        return _failed(
            done, f"DNS: {host} does not resolve", "check the host name in base_url (and DNS or proxy)"
        )
    if cause == "tls":
        return _failed(
            done, f"TLS: the handshake with {host} failed",
            "check that the server speaks https on that port (else use http://), or trust its CA: ca_file",
        )  # fmt: skip
    if cause == "proxy":
        return _failed(done, f"proxy: {message}", "check the provider's `proxy` (or HTTPS_PROXY / NO_PROXY)")
    if cause in ("connect", "timeout"):
        return _failed(done, f"connect: {message}", _reach_fix(done.base_url))
    if status in (401, 403):
        return _failed(
            done, f"HTTP {status}: the upstream refused the key",
            "check the provider's api_key (or its variable, e.g. OPENAI_API_KEY) and what it may do",
        )  # fmt: skip
    if status == 404:
        return _failed(
            done, f"HTTP 404: no API at {done.base_url}", base_url_fix(done.protocol, done.base_url)
        )
    if status is not None and 300 <= status < 400:
        return _failed(
            done, f"HTTP {status}: the upstream redirects",
            "set base_url to the address it redirects to (https instead of http, or the full API path)",
        )  # fmt: skip
    return _failed(done, message, "see the upstream's message; check base_url and api_key")


def base_url_fix(protocol: str, base_url: str) -> str:
    """What to change in a base URL that answered 404: for an OpenAI-compatible upstream the
    usual cause is a missing `/v1`."""
    path = urlsplit(base_url).path.rstrip("/")
    if protocol in ("openai", "azure") and not path.endswith("/v1"):
        return f"the base_url probably lacks /v1: try {base_url.rstrip('/')}/v1"
    if protocol in ("anthropic", "gemini") and path:
        return (
            f"the base_url should be the host's root (the adapter adds the API path): try {_root(base_url)}"
        )
    return "check base_url: it should be the URL the vendor's own SDK takes as base URL"


def _root(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _reach_fix(base_url: str) -> str:
    return f"check that {_root(base_url)} is up and reachable from here (host, port, firewall, proxy)"


def _failed(done: Check, problem: str, fix: str) -> Check:
    return Check(done.provider, done.protocol, done.base_url, False, problem, fix)


def _default_base(provider: Provider) -> str:
    http = getattr(provider, "http", None)
    base = getattr(http, "base_url", "") if http is not None else ""
    return str(base) if base else ""
