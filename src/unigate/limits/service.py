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
from dataclasses import dataclass
from functools import partial
from typing import NoReturn

from unigate.auth.principal import Principal
from unigate.errors import BudgetExceeded, RateLimited
from unigate.limits.backend import Counters, Demand, Refusal
from unigate.limits.counters import WINDOW, format_reset
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
    """What one admitted call reserved and must settle exactly once: its token and budget
    demands (requests per minute need no settling)."""

    demands: list[Demand]
    tokens: float
    cost: float
    settled: bool = False


class Limits:
    def __init__(self, counters: Counters, load_spend: SpendLoader) -> None:
        self.counters = counters
        self._load_spend = load_spend
        self._key_names: dict[str, tuple[str, str, str]] = {}

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
    ) -> Ticket | None:
        """Take the call's share of every limit that applies, or raise 429 (`RateLimited`,
        with an honest Retry-After) / `BudgetExceeded` (no retry helps). Returns what must be
        settled when the call ends, or None when nothing needs settling."""
        demands, corrects = self._demands(principal, entry, tokens, cost)
        refusal = await self.counters.take(demands)
        if refusal is not None and refusal.unseeded:
            _, start = period_of(principal.budget_period, time.time())
            spent = await self._load_spend(principal.key_id, start)
            for i in refusal.unseeded:
                await self.counters.seed(demands[i].name, demands[i].period, spent)
            refusal = await self.counters.take(demands)
        if refusal is not None:
            self._refuse(principal, demands, refusal)
        return Ticket(demands, tokens, cost) if corrects else None

    async def settle(self, ticket: Ticket | None, tokens: float = 0.0, cost: float = 0.0) -> None:
        """Replace the ticket's estimates by what the call used. Once: later calls are no-ops."""
        if ticket is None or ticket.settled:
            return
        ticket.settled = True
        changes = []
        for d in ticket.demands:
            if d.name.endswith(":tpm") and tokens != ticket.tokens:
                changes.append(Demand(d.name, "rate", d.limit, tokens - ticket.tokens, 0, d.local))
            elif d.kind == "budget" and cost != ticket.cost:
                changes.append(Demand(d.name, "budget", d.limit, cost - ticket.cost, d.period, d.local))
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
        self, principal: Principal, entry: ModelEntry | None, tokens: float, cost: float
    ) -> tuple[list[Demand], bool]:
        rpm, tpm, budget = self._names(principal.key_id)
        out: list[Demand] = []
        corrects = False
        if principal.rpm:
            out.append(Demand(rpm, "rate", principal.rpm, 1))
        if principal.tpm:
            out.append(Demand(tpm, "rate", principal.tpm, tokens))
            corrects = True
        if entry is not None:
            if entry.rpm:
                out.append(Demand(f"model:{entry.name}:rpm", "rate", entry.rpm, 1))
            if entry.tpm:
                out.append(Demand(f"model:{entry.name}:tpm", "rate", entry.tpm, tokens))
                corrects = True
        if principal.budget is not None:
            period, _ = period_of(principal.budget_period, time.time())
            out.append(Demand(budget, "budget", principal.budget, cost, period))
            corrects = True
        return out, corrects

    @staticmethod
    def _refuse(principal: Principal, demands: list[Demand], refusal: Refusal) -> NoReturn:
        d = demands[refusal.refused]
        if d.kind == "budget":
            raise BudgetExceeded(
                f"This API key's {_period_word(principal.budget_period)}budget of {principal.budget:g} "
                "does not cover this request."
            )
        what = "tokens" if d.name.endswith(":tpm") else "requests"
        whose = "this key" if d.name.startswith("key:") else f"the model '{d.name.split(':', 2)[1]}'"
        if math.isinf(refusal.wait):
            raise RateLimited(
                f"This request's estimated {int(d.amount)} tokens exceed the limit of {d.limit:g} "
                f"{what} per minute for {whose}.",
                code="request_too_large",
            )
        raise RateLimited(
            f"Rate limit of {d.limit:g} {what} per minute reached for {whose}; "
            f"retry after {refusal.wait:.2f}s.",
            headers={"retry-after": str(max(1, math.ceil(refusal.wait)))},
        )

    def headers(self, principal: Principal) -> list[Header]:
        """The key's `x-ratelimit-*` figures as they stand (after this call's admission)."""
        rpm, tpm, _ = self._names(principal.key_id)
        out: list[Header] = []
        if principal.rpm:
            out += rate_headers(_REQUESTS, principal.rpm, self.counters.ahead(rpm))
        if principal.tpm:
            out += rate_headers(_TOKENS, principal.tpm, self.counters.ahead(tpm))
        return out

    def headers_for(self, principal: Principal) -> Callable[[], list[Header]]:
        """`headers` for one key, to call when its response starts (whichever response)."""
        return partial(self.headers, principal)

    def _names(self, key_id: str) -> tuple[str, str, str]:
        """A key's counter names (built once per key, not per request)."""
        names = self._key_names.get(key_id)
        if names is None:
            if len(self._key_names) >= 100_000:
                self._key_names.clear()
            names = (f"key:{key_id}:rpm", f"key:{key_id}:tpm", f"key:{key_id}:budget")
            self._key_names[key_id] = names
        return names


_REQUESTS = (b"x-ratelimit-limit-requests", b"x-ratelimit-remaining-requests", b"x-ratelimit-reset-requests")
_TOKENS = (b"x-ratelimit-limit-tokens", b"x-ratelimit-remaining-tokens", b"x-ratelimit-reset-tokens")


def rate_headers(names: tuple[bytes, bytes, bytes], limit: int, ahead: float) -> list[Header]:
    # Plain arithmetic inline: this runs on every response of a limited key.
    remaining = int((WINDOW - ahead) * limit / WINDOW + 1e-9)
    return [
        (names[0], b"%d" % limit),
        (names[1], b"%d" % remaining if remaining > 0 else b"0"),
        (names[2], format_reset(ahead)),
    ]


def _period_word(kind: str) -> str:
    return {"daily": "daily ", "monthly": "monthly "}.get(kind, "")
