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
from unigate.limits.counters import format_reset, rate_remaining
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
    # Whether settling can change anything: only token counters and budgets are corrected.
    corrects: bool = False
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
        demands, corrects = self._demands(principal, entry, tokens, cost)
        decision = await self.counters.take(demands)
        if decision.unseeded:
            _, start = period_of(principal.budget_period, time.time())
            spent = await self._load_spend(principal.key_id, start)
            for i in decision.unseeded:
                await self.counters.seed(demands[i].name, demands[i].period, spent)
            decision = await self.counters.take(demands)
        if not decision.allowed:
            self._refuse(principal, demands, decision)
        return Ticket(demands, tokens, cost, self._headers(demands, decision), corrects)

    async def settle(self, ticket: Ticket | None, tokens: float = 0.0, cost: float = 0.0) -> None:
        """Replace the ticket's estimates by what the call used. Once: later calls are no-ops."""
        if ticket is None or ticket.settled:
            return
        ticket.settled = True
        if not ticket.corrects:
            return
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

    @staticmethod
    def _demands(
        principal: Principal, entry: ModelEntry | None, tokens: float, cost: float
    ) -> tuple[list[Demand], bool]:
        key = principal.key_id
        out: list[Demand] = []
        corrects = False
        if principal.rpm:
            out.append(Demand(f"key:{key}:rpm", "rate", principal.rpm, 1))
        if principal.tpm:
            out.append(Demand(f"key:{key}:tpm", "rate", principal.tpm, tokens))
            corrects = True
        if entry is not None:
            if entry.rpm:
                out.append(Demand(f"model:{entry.name}:rpm", "rate", entry.rpm, 1))
            if entry.tpm:
                out.append(Demand(f"model:{entry.name}:tpm", "rate", entry.tpm, tokens))
                corrects = True
        if principal.budget is not None:
            period, _ = period_of(principal.budget_period, time.time())
            out.append(Demand(f"key:{key}:budget", "budget", principal.budget, cost, period))
            corrects = True
        return out, corrects

    def _refuse(self, principal: Principal, demands: list[Demand], decision: Decision) -> None:
        d = demands[decision.refused]
        if d.kind == "budget":
            raise BudgetExceeded(
                f"This API key's {_period_word(principal.budget_period)}budget of {principal.budget:g} "
                "does not cover this request."
            )
        what = "tokens" if d.name.endswith(":tpm") else "requests"
        whose = "this key" if d.name.startswith("key:") else f"the model '{d.name.split(':', 2)[1]}'"
        headers = {k.decode(): v.decode() for k, v in self._headers(demands, decision)}
        if math.isinf(decision.wait):
            raise RateLimited(
                f"This request's estimated {int(d.amount)} tokens exceed the limit of {d.limit:g} "
                f"{what} per minute for {whose}.",
                code="request_too_large",
                headers=headers,
            )
        headers["retry-after"] = str(max(1, math.ceil(decision.wait)))
        raise RateLimited(
            f"Rate limit of {d.limit:g} {what} per minute reached for {whose}; "
            f"retry after {decision.wait:.2f}s.",
            headers=headers,
        )

    @staticmethod
    def _headers(demands: list[Demand], decision: Decision) -> list[Header]:
        """The key's figures (a model's limits are not the key's to show)."""
        out: list[Header] = []
        for d, ahead in zip(demands, decision.aheads, strict=False):
            if ahead >= 0 and d.name.startswith("key:"):
                out += rate_headers(_TOKENS if d.name.endswith(":tpm") else _REQUESTS, d.limit, ahead)
        return out

    def peek_headers(self, principal: Principal) -> list[Header]:
        """The key's current figures, for responses that take nothing (fetches, lists)."""
        out: list[Header] = []
        key = principal.key_id
        if principal.rpm:
            out += rate_headers(_REQUESTS, principal.rpm, self.counters.ahead(f"key:{key}:rpm"))
        if principal.tpm:
            out += rate_headers(_TOKENS, principal.tpm, self.counters.ahead(f"key:{key}:tpm"))
        return out


_REQUESTS = (b"x-ratelimit-limit-requests", b"x-ratelimit-remaining-requests", b"x-ratelimit-reset-requests")
_TOKENS = (b"x-ratelimit-limit-tokens", b"x-ratelimit-remaining-tokens", b"x-ratelimit-reset-tokens")


def rate_headers(names: tuple[bytes, bytes, bytes], limit: float, ahead: float) -> list[Header]:
    return [
        (names[0], b"%d" % limit),
        (names[1], b"%d" % rate_remaining(limit, ahead)),
        (names[2], format_reset(ahead)),
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

