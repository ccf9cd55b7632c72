"""What the Redis limit backend does while Redis cannot be reached, and how it comes back.

The choice is per kind of limit (`limits.redis_down` in the config, read at each switch and
each call, so a reload applies it):

- **rates** (`rpm`, `tpm`), default `local`: decided on this node's own counters (the workers
  of one `unigate serve` share them, as on a single node). Traffic goes on; each replica
  enforces the whole limit on its own, so N replicas let up to N times a limit through for as
  long as Redis is away. A rate limit protects an upstream's quota from bursts, and the
  upstream's own 429s (with fallback routes) still bound the damage; refusing every limited
  call because a counter store is away would be the larger outage. `closed` refuses instead.
- **budgets**, default `closed`: calls on a key with a budget get 503 `limits_unavailable`
  (Retry-After: 2). A budget is money: with `local`, each replica would reload the spend from
  the database and could then spend what was left once per replica. Operators who prefer
  availability set `local` and accept that bound: at most (replicas - 1) times what was left
  of each budget when Redis went away.

One WARNING line when a process switches to its fallback and one INFO line when it is back,
never a line per request; `unigate_limit_backend_fallbacks_total` counts the switches and
`unigate_limit_backend_degraded` is the number of worker processes on their fallback now.
While down, no call waits on Redis: a probe (PING, backoff 0.25 s doubling to 1 s) runs in
the background and the first call after it succeeds uses Redis again, so limits are global
again within about a second of Redis answering.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from unigate.config import RedisDownConfig
from unigate.errors import GatewayError
from unigate.limits.backend import Demand, LocalCounters, Refusal

if TYPE_CHECKING:
    from unigate.observability.metrics import Metrics

log = logging.getLogger("unigate.limits")

RedisDownPolicy = RedisDownConfig
PROBE_FIRST = 0.25
PROBE_MAX = 1.0


class Outage:
    """One process's view of whether Redis is reachable, and its fallback decisions."""

    def __init__(
        self,
        ping: Callable[[], Awaitable[Any]],
        policy: Callable[[], RedisDownPolicy],
        metrics: Metrics | None,
        recovered: Callable[[], Awaitable[None]],
    ) -> None:
        self.down = False
        self._ping = ping
        self._policy = policy
        self._metrics = metrics
        self._recovered = recovered
        self._since = 0.0
        self._probe: asyncio.Task[None] | None = None
        # Budgets reloaded from the database since this outage began (policy `local`): the
        # local counter may hold a figure from an earlier outage, stale by everything every
        # replica spent since.
        self._reseeded: set[str] = set()

    def failed(self, exc: BaseException) -> None:
        """A call to Redis failed: switch to the fallback (once) and start probing."""
        if self.down:
            return
        self.down = True
        self._since = time.monotonic()
        self._reseeded.clear()
        policy = self._policy()
        # The exception's text names the host and port at most, never the URL's password.
        log.warning(
            "Redis unreachable for limits (%s: %s); rate limits: %s, budgets: %s, until it is back",
            type(exc).__name__, exc, _words(policy.rates), _words(policy.budgets),
        )  # fmt: skip
        if self._metrics is not None:
            self._metrics.limit_backend_switched(down=True)
        self._probe = asyncio.get_running_loop().create_task(self._wait_for_redis())

    async def _wait_for_redis(self) -> None:
        delay = PROBE_FIRST
        while True:
            await asyncio.sleep(delay)
            try:
                await self._ping()
                await self._recovered()
            except Exception:  # any failure means: not back yet
                delay = min(delay * 2, PROBE_MAX)
                continue
            break
        self.down = False
        self._probe = None
        log.info("Redis reachable again for limits after %.1f s; limits are global again",
                 time.monotonic() - self._since)  # fmt: skip
        if self._metrics is not None:
            self._metrics.limit_backend_switched(down=False)

    def take_local(self, fallback: LocalCounters, demands: Sequence[Demand]) -> Refusal | None:
        """Decide on this node's counters, or refuse with 503 where the policy says closed."""
        policy = self._policy()
        unseeded: list[int] = []
        for i, d in enumerate(demands):
            if d.kind == "rate":
                if policy.rates == "closed":
                    raise LimitsUnavailable("rate limits")
            elif policy.budgets == "closed":
                raise LimitsUnavailable("budgets")
            elif d.name not in self._reseeded:
                unseeded.append(i)
        if unseeded:
            return Refusal(-1, 0.0, unseeded)
        refusal = fallback.take_now(demands, time.time())
        if refusal is None:
            for d in demands:
                d.local = True  # settled on the same counters
        return refusal

    async def seed_local(self, fallback: LocalCounters, name: str, period: int, spent: float) -> None:
        await fallback.seed(name, period, spent, force=name not in self._reseeded)
        if len(self._reseeded) >= 100_000:
            self._reseeded.clear()
        self._reseeded.add(name)

    def close(self) -> None:
        if self._probe is not None:
            self._probe.cancel()


class LimitsUnavailable(GatewayError):
    """Redis is unreachable and this kind of limit is configured `closed`: nothing was
    admitted or charged; retry shortly."""

    status, type, code = 503, "server_error", "limits_unavailable"

    def __init__(self, what: str) -> None:
        super().__init__(
            f"The gateway cannot check this key's {what} right now; nothing was charged. Retry shortly.",
            headers={"retry-after": "2"},
        )


def _words(choice: str) -> str:
    return "decided per node" if choice == "local" else "refused (503)"
