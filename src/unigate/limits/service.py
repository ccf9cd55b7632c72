"""Admission and settlement of every call against its key's and its model's limits.

    ticket = await limits.admit(principal, entry, tokens=estimate, cost=estimate)   # or 429
    ...                                                                             # the call
    await limits.settle(ticket, tokens=real, cost=real)                             # exactly once

Admission takes, all or nothing: one request from the key's and the model's requests per
minute, the estimated tokens from their tokens per minute, and the estimated cost from the
key's budget for its period. Settlement replaces the estimates by what the call really used
(for a failed call: nothing), so the counters end exact and a failed call costs no money.
Keys and models without limits pay nothing for this: `applies` is two attribute reads.

Overspend bound: a call is admitted only when its reserved estimate fits, so concurrent calls
can exceed a budget only by what they use beyond their estimates: nothing for a call whose
`max_tokens` (or the equivalent) is given and whose prompt is counted no lower than the
upstream counts it; otherwise at most what each in-flight call produces past
`limits.budget_output_estimate` tokens.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from unigate.asgi import Message, Send
from unigate.auth.principal import Principal
from unigate.errors import BudgetExceeded, RateLimited
from unigate.limits.backend import Counters, Decision, Demand
from unigate.limits.counters import RateState, format_reset
from unigate.routing.catalog import ModelEntry

SpendLoader = Callable[[str, float], Awaitable[float]]  # (key id, period start) -> spent
Header = tuple[bytes, bytes]


def period_of(kind: str, now: float) -> tuple[int, float]:
    """(period index, period start) of a budget period at `now`, UTC."""
    if kind == "daily":
        day = int(now // 86400)
        return day, day * 86400.0
    if kind == "monthly":
        d = dt.datetime.fromtimestamp(now, dt.UTC)
        start = dt.datetime(d.year, d.month, 1, tzinfo=dt.UTC).timestamp()
        return d.year * 12 + d.month - 1, start
    return 0, 0.0


@dataclass(slots=True)
class Ticket:
    """What one admitted call reserved, to be settled exactly once."""

    demands: list[Demand]
    tokens: float
    cost: float
    headers: list[Header] = field(default_factory=list)
    settled: bool = False


class Limits:
    def __init__(self, counters: Counters, load_spend: SpendLoader) -> None:
        self.counters = counters
        self._load_spend = load_spend

    @staticmethod
    def applies(principal: Principal, entry: ModelEntry | None) -> bool:
        if principal.rpm or principal.tpm or principal.budget is not None:
            return True
        return entry is not None and bool(entry.rpm or entry.tpm)

    @staticmethod
    def wants_tokens(principal: Principal, entry: ModelEntry | None) -> bool:
        """Whether admission needs a token estimate (counting a prompt costs time)."""
        return bool(principal.tpm or (entry is not None and entry.tpm))

    async def admit(
        self, principal: Principal, entry: ModelEntry | None, tokens: float = 0.0, cost: float = 0.0
    ) -> Ticket:
        """Take the call's share of every limit that applies, or raise 429 (`RateLimited`,
        with an honest Retry-After) / `BudgetExceeded` (no retry helps)."""
        demands = self._demands(principal, entry, tokens, cost, time.time())
        decision = await self.counters.take(demands)
        if decision.unseeded:
            for i in decision.unseeded:
                d = demands[i]
                _, start = period_of(principal.budget_period, time.time())
                await self.counters.seed(d.name, d.period, await self._load_spend(principal.key_id, start))
            decision = await self.counters.take(demands)
        if not decision.allowed:
            self._refuse(principal, demands, decision)
        return Ticket(demands, tokens, cost, self._headers(principal, demands, decision))

    async def settle(self, ticket: Ticket | None, tokens: float = 0.0, cost: float = 0.0) -> None:
        """Replace the ticket's estimates by what the call used. Once: later calls are no-ops."""
        if ticket is None or ticket.settled:
            return
        ticket.settled = True
        changes = []
        for d in ticket.demands:
            if d.name.endswith(":tpm") and tokens != ticket.tokens:
                changes.append(Demand(d.name, "rate", d.limit, tokens - ticket.tokens))
            elif d.kind == "budget" and cost != ticket.cost:
                changes.append(Demand(d.name, "budget", d.limit, cost - ticket.cost, d.period))
        if changes:
            await self.counters.adjust(changes)

    async def refund(self, principal: Principal, amount: float, at: float) -> None:
        """Give back money charged at time `at` (a failed task's price), if its period is
        still the current one."""
        if principal.budget is None or amount <= 0:
            return
        period, _ = period_of(principal.budget_period, at)
        name = f"key:{principal.key_id}:budget"
        await self.counters.adjust([Demand(name, "budget", principal.budget, -amount, period)])

    def _demands(
        self, principal: Principal, entry: ModelEntry | None, tokens: float, cost: float, now: float
    ) -> list[Demand]:
        key = principal.key_id
        out: list[Demand] = []
        if principal.rpm:
            out.append(Demand(f"key:{key}:rpm", "rate", principal.rpm, 1))
        if principal.tpm:
            out.append(Demand(f"key:{key}:tpm", "rate", principal.tpm, tokens))
        if entry is not None and entry.rpm:
            out.append(Demand(f"model:{entry.name}:rpm", "rate", entry.rpm, 1))
        if entry is not None and entry.tpm:
            out.append(Demand(f"model:{entry.name}:tpm", "rate", entry.tpm, tokens))
        if principal.budget is not None:
            period, _ = period_of(principal.budget_period, now)
            out.append(Demand(f"key:{key}:budget", "budget", principal.budget, cost, period))
        return out

    def _refuse(self, principal: Principal, demands: list[Demand], decision: Decision) -> None:
        d = demands[decision.refused]
        if d.kind == "budget":
            raise BudgetExceeded(
                f"This API key's {_period_word(principal.budget_period)}budget of {principal.budget:g} "
                "does not cover this request."
            )
        state = decision.rates[decision.refused]
        assert state is not None
        what = "tokens" if d.name.endswith(":tpm") else "requests"
        whose = "this key" if d.name.startswith("key:") else f"the model '{d.name.split(':', 2)[1]}'"
        headers = {k.decode(): v.decode() for k, v in self._headers(principal, demands, decision)}
        if math.isinf(state.retry_after):
            raise RateLimited(
                f"This request's estimated {int(d.amount)} tokens exceed the limit of {d.limit:g} "
                f"{what} per minute for {whose}.",
                code="request_too_large",
                headers=headers,
            )
        headers["retry-after"] = str(max(1, math.ceil(state.retry_after)))
        raise RateLimited(
            f"Rate limit of {d.limit:g} {what} per minute reached for {whose}; "
            f"retry after {state.retry_after:.2f}s.",
            headers=headers,
        )

    def _headers(self, principal: Principal, demands: list[Demand], decision: Decision) -> list[Header]:
        out: list[Header] = []
        for d, state in zip(demands, decision.rates, strict=False):
            if state is None or not d.name.startswith("key:"):
                continue
            out.extend(rate_headers("tokens" if d.name.endswith(":tpm") else "requests", d.limit, state))
        return out

    def peek_headers(self, principal: Principal) -> list[Header]:
        """The key's current figures, for responses that take nothing (fetches, lists)."""
        peek = getattr(self.counters, "peek_rate", None)
        if peek is None:
            return []
        out: list[Header] = []
        key = principal.key_id
        if principal.rpm:
            out.extend(rate_headers("requests", principal.rpm, peek(f"key:{key}:rpm", principal.rpm)))
        if principal.tpm:
            out.extend(rate_headers("tokens", principal.tpm, peek(f"key:{key}:tpm", principal.tpm)))
        return out


def rate_headers(what: str, limit: float, state: RateState) -> list[Header]:
    return [
        (b"x-ratelimit-limit-" + what.encode(), str(int(limit)).encode()),
        (b"x-ratelimit-remaining-" + what.encode(), str(state.remaining).encode()),
        (b"x-ratelimit-reset-" + what.encode(), format_reset(state.reset).encode()),
    ]


def _period_word(kind: str) -> str:
    return {"daily": "daily ", "monthly": "monthly "}.get(kind, "")


class RateHeaderSend:
    """Wraps a limited key's `send` so every response carries the key's `x-ratelimit-*`
    figures: calls that took from the limits already carry them (admission's view); any
    other response (a fetch, a list, an early 4xx) gets the counters' current view."""

    __slots__ = ("limits", "principal", "send")

    def __init__(self, send: Send, limits: Limits, principal: Principal) -> None:
        self.send = send
        self.limits = limits
        self.principal = principal

    def __call__(self, message: Message) -> Awaitable[None]:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(k in _LIMIT_NAMES for k, _ in headers):
                headers.extend(self.limits.peek_headers(self.principal))
                message = {**message, "headers": headers}
        return self.send(message)


_LIMIT_NAMES = frozenset({b"x-ratelimit-limit-requests", b"x-ratelimit-limit-tokens"})

