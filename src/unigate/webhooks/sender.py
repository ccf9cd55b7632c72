"""Webhook delivery: one POST attempt per `deliver` call, classified for the outbox's retry loop.

Contract (Standard Webhooks "delivery success and failure", checklist W6/S4/S8):
2xx is success; redirects are never followed and count as failures; 410 means the endpoint is gone
(permanent); 429/502/503/504 honour `Retry-After`; unsafe URLs are refused without dialling.
Response bodies are read (at most 64 KiB, so the connection can be reused) and discarded, and
error strings are short fixed phrases: nothing from the receiver or the URL is echoed back.

Requests go through the project's own HTTP client (`transport/`): one small pool per receiver
origin, dialled only through `GuardedResolver` (the address checked is the address dialled),
never through a proxy from the environment (the guard must see the real target), with no
cookies and no decoding of compressed bodies (no decompression bombs).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from unigate.transport.dial import Dialer
from unigate.transport.errors import (
    ConnectFailed,
    LocalExhausted,
    PoolExhausted,
    UpstreamError,
    UpstreamTimeout,
)
from unigate.transport.pool import Pool
from unigate.transport.response import Response
from unigate.webhooks.ssrf import (
    AddressResolver,
    GuardedResolver,
    RefusedAddress,
    Target,
    UnsafeURL,
    check_url,
)

# Seconds before attempt n (0 = first delivery): ~2.5 days in total, like Standard Webhooks' example.
DEFAULT_SCHEDULE: tuple[float, ...] = (0, 5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200, 86400)
DEFAULT_TIMEOUT = 15.0
MAX_RESPONSE_READ = 64 * 1024
# A receiver may slow us down, but not park a delivery for longer than a day.
MAX_RETRY_AFTER = 86400.0
JITTER = 0.1
_SLOW_DOWN = frozenset({429, 502, 503, 504})
GONE = "endpoint gone (HTTP 410)"


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    ok: bool
    status: int | None
    retry_after: float | None
    error: str
    permanent: bool
    gone: bool = False  # 410: the receiver wants no more events for this task
    # The SSRF guard refused the URL or the address its name resolves to: nothing was sent, and
    # an attempt later would be refused the same way (permanent).
    refused: bool = False


def _failure(error: str, status: int | None = None, *, permanent: bool = False) -> DeliveryResult:
    return DeliveryResult(ok=False, status=status, retry_after=None, error=error, permanent=permanent)


def _refused(reason: str) -> DeliveryResult:
    return DeliveryResult(
        ok=False, status=None, retry_after=None, error=f"refused: {reason}", permanent=True, refused=True
    )


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` as seconds from now (delay-seconds or HTTP-date), capped; None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        seconds = float(value)
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def classify(status: int, headers: Mapping[str, str] | Sequence[tuple[str, str]]) -> DeliveryResult:
    """Map an HTTP status (and `Retry-After`, its name in any case) to a delivery outcome."""
    if 200 <= status < 300:
        return DeliveryResult(ok=True, status=status, retry_after=None, error="", permanent=False)
    if status == 410:
        return DeliveryResult(
            ok=False, status=status, retry_after=None, error=GONE, permanent=True, gone=True
        )
    if 300 <= status < 400:
        return _failure(f"redirect not followed (HTTP {status})", status)
    if status in _SLOW_DOWN:
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        retry_after = parse_retry_after(next((v for k, v in pairs if k.lower() == "retry-after"), None))
        return DeliveryResult(
            ok=False, status=status, retry_after=retry_after, error=f"HTTP {status}", permanent=False
        )
    return _failure(f"HTTP {status}", status)


def backoff_schedule(
    attempt: int, schedule: Sequence[float] = DEFAULT_SCHEDULE, *, rng: random.Random | None = None
) -> float | None:
    """Delay in seconds before delivery attempt `attempt` (= attempts already made; 0 before the
    first one), with +/-10% jitter so retries of many events do not arrive in lockstep.
    None when the schedule is exhausted: mark the delivery failed and let the user replay it."""
    if attempt < 0:
        raise ValueError("attempt must be >= 0")
    if attempt >= len(schedule):
        return None
    base = float(schedule[attempt])
    uniform = (rng or random).uniform  # not for secrets: jitter only
    return max(0.0, base * uniform(1 - JITTER, 1 + JITTER))


async def _drain(resp: Response) -> None:
    """Read and discard at most MAX_RESPONSE_READ bytes; drop the connection if more remain."""
    remaining = MAX_RESPONSE_READ
    try:
        async for chunk in resp.iter_any():
            remaining -= len(chunk)
            if remaining <= 0:
                break
    except (UpstreamError, TimeoutError):
        pass  # the status line already answered; a broken body does not change the outcome
    resp.release()  # an unread rest closes the connection


USER_AGENT = "unigate-webhooks/1"
MAX_ORIGINS = 64  # receiver pools kept; past it the idle ones are closed
_KEEPALIVE = 15.0


class WebhookSender:
    """Pooled connections for all webhook deliveries and URL fetches, dialling only through
    `GuardedResolver`.

    `allow_private=True` is an explicit operator opt-in (e.g. receivers on a private network);
    the default refuses loopback/private/link-local/metadata targets (fail closed).
    """

    def __init__(self, allow_private: bool = False, *, inner_resolver: AddressResolver | None = None) -> None:
        self.allow_private = allow_private
        self._inner_resolver = inner_resolver
        self._dialer: Dialer | None = None
        self._pools: dict[str, Pool] = {}
        self._closing: set[asyncio.Future[None]] = set()  # pools dropped, closing

    async def start(self) -> None:
        if self._dialer is not None:
            return
        resolver = GuardedResolver(self.allow_private, inner=self._inner_resolver)
        # No proxy, not even the environment's: the guard must see the address really dialled.
        self._dialer = Dialer(resolver=resolver)

    async def aclose(self) -> None:
        self._dialer = None
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()

    async def __aenter__(self) -> WebhookSender:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _pool(self, target: Target) -> Pool:
        if self._dialer is None:
            raise RuntimeError("webhook sender used before start()")
        origin = target.origin
        pool = self._pools.get(origin)
        if pool is None:
            if len(self._pools) >= MAX_ORIGINS:
                self._forget_idle()
            headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
            pool = Pool(origin, headers, _KEEPALIVE, dialer=self._dialer, decode=False)
            self._pools[origin] = pool
        return pool

    def _forget_idle(self) -> None:
        for origin, pool in list(self._pools.items()):
            if not pool.in_use():
                del self._pools[origin]
                closing = asyncio.ensure_future(pool.aclose())
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)

    async def request(
        self, method: str, target: Target, body: bytes, headers: Mapping[str, str] | None, timeout: float
    ) -> Response:
        """One exchange with `target`, whole within `timeout` seconds (its body read included,
        when the caller reads it before then); never repeated on a stale connection."""
        pool = self._pool(target)
        return await pool.request(
            method,
            target.path,
            body,
            connect=timeout,
            read=timeout,
            total=timeout,
            headers=headers,
            replay=False,
        )

    async def deliver(
        self, url: str, body: bytes, headers: dict[str, str], timeout: float = DEFAULT_TIMEOUT
    ) -> DeliveryResult:
        """POST `body` once. Never raises for network or policy outcomes; see the module doc."""
        try:
            # Re-checked on every attempt (DNS and policy can change over a task's lifetime).
            target = check_url(url, allow_private=self.allow_private)
        except UnsafeURL as exc:
            return _refused(str(exc))
        try:
            async with asyncio.timeout(timeout):
                resp = await self.request("POST", target, body, headers, timeout)
                await _drain(resp)
                return classify(resp.status, resp.headers.items())
        except RefusedAddress as exc:
            return _refused(str(exc))
        except (TimeoutError, UpstreamTimeout):
            return _failure("timeout")
        except (ConnectFailed, LocalExhausted, PoolExhausted) as exc:
            return _failure(f"connection failed ({type(exc).__name__})")
        except (UpstreamError, OSError) as exc:
            return _failure(f"request failed ({type(exc).__name__})")
