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
from typing import Any, Final, NoReturn

from unigate.auth.principal import Principal
from unigate.errors import BudgetExceeded, RateLimited
from unigate.limits.backend import Counters, Demand, LocalCounters, Refusal
from unigate.limits.counters import WINDOW, format_reset
from unigate.limits.estimate import TextTokens, output_cap, prompt_tokens
from unigate.limits.key_slots import KeySlots
from unigate.limits.recent_lists import RecentLists
from unigate.routing.catalog import ModelEntry
from unigate.single_flight import SingleFlight

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


class Ticket:
    """What one admitted call reserved and must settle exactly once: its token and budget
    demands (requests per minute need no settling), or, admitted on the key's own slots, those
    and the budget period. (Its own `__init__`, not a dataclass's: compiled, that one runs as
    Python.)"""

    __slots__ = ("cost", "demands", "period", "settled", "slots", "tokens")

    def __init__(
        self,
        demands: list[Demand],
        tokens: float,
        cost: float,
        settled: bool = False,
        slots: KeySlots | None = None,
        period: int = 0,
    ) -> None:
        self.demands = demands
        self.tokens = tokens
        self.cost = cost
        self.settled = settled
        self.slots = slots
        self.period = period

    def __repr__(self) -> str:
        return f"Ticket(tokens={self.tokens}, cost={self.cost}, settled={self.settled})"


# `admit_now`'s answer when it cannot decide without awaiting: `admit` must. Already settled,
# so settling it by mistake changes nothing.
PENDING: Final = Ticket([], 0.0, 0.0, settled=True)


class _KeyPlan:
    """What a key's admissions and headers need that does not change per call, built once per
    key (and again when the key's limits change, which brings a new `Principal`): its counter
    names, its limits as header bytes, its budget period until that period ends. It is the
    `ExtraHeaders` (edge/asgi.py) the edge adds to the key's responses: `headers` as pairs,
    `lines` joined."""

    __slots__ = (
        "_ahead",
        "_count",
        "_names",
        "_rpm",
        "_template",
        "_tpm",
        "budget_ends",
        "budget_name",
        "budget_period",
        "principal",
        "rpm_name",
        "slots",
        "tpm_name",
    )

    def __init__(self, limits: Limits, principal: Principal) -> None:
        key_id = principal.key_id
        self.principal = principal
        self.rpm_name = f"key:{key_id}:rpm"
        self.tpm_name = f"key:{key_id}:tpm"
        self.budget_name = f"key:{key_id}:budget"
        self.budget_period = 0
        self.budget_ends = -math.inf  # the period is looked up at the first admission
        counters = limits.counters
        self._ahead = counters.ahead
        # On this node's table, the key's own limits are admitted in one call (key_slots.py).
        slots = None
        if isinstance(counters, LocalCounters):
            names = (self.rpm_name, self.tpm_name, self.budget_name)
            slots = KeySlots(counters.table, names, principal.rpm, principal.tpm, principal.budget)
        self.slots = slots
        self._rpm = _rate_header_head(_REQUESTS, principal.rpm)
        self._tpm = _rate_header_head(_TOKENS, principal.tpm)
        rates = [rate for rate in (self._rpm, self._tpm) if rate is not None]
        # `lines`' block with its figures left as `%d`/`%s`: one format per response.
        self._template = b"".join(rate.template for rate in rates)
        self._count = 3 * len(rates)
        # `headers`' pairs: each rate's limit, and the names of its two figures.
        self._names = tuple((rate.limit_header, rate.names[1], rate.names[2]) for rate in rates)

    def _figures(self) -> tuple[Any, ...]:
        """What the key's rate limits' header lines are filled with (`_RateHeaders.fill`: the
        remaining count and the reset of each, in turn), its counters read at one instant."""
        rpm, tpm = self._rpm, self._tpm
        slots = self.slots
        if slots is not None and slots.claimed:
            floats, rpm_at, tpm_at = slots.floats, slots.rpm_at, slots.tpm_at
            rpm_tat = floats[rpm_at] if rpm_at >= 0 else 0.0
            tpm_tat = floats[tpm_at] if tpm_at >= 0 else 0.0
            now = time.time()
        else:
            # Before the key's slots are claimed (or on Redis): the counters' own figures,
            # which are already relative to now.
            ahead = self._ahead
            rpm_tat = ahead(self.rpm_name) if rpm is not None else 0.0
            tpm_tat = ahead(self.tpm_name) if tpm is not None else 0.0
            now = 0.0
        if tpm is None:
            return () if rpm is None else rpm.fill(rpm_tat, now)
        if rpm is None:
            return tpm.fill(tpm_tat, now)
        return rpm.fill(rpm_tat, now) + tpm.fill(tpm_tat, now)

    def lines(self) -> tuple[bytes, int]:
        """The key's `x-ratelimit-*` header lines as its counters stand, and how many: every
        whole response of a limited key carries them, formatted into its template at once."""
        return self._template % self._figures(), self._count

    def headers(self) -> list[Header]:
        """The same headers as pairs, for a response that starts with ASGI headers (a stream,
        or any response through another server)."""
        figures = self._figures()
        out: list[Header] = []
        for i, (limit, remaining, reset) in enumerate(self._names):
            out += (limit, (remaining, b"%d" % figures[2 * i]), (reset, figures[2 * i + 1]))
        return out

    def period(self, now: float) -> int:
        """The budget's period index at `now`, recomputed only when the last one has ended."""
        if now >= self.budget_ends:
            self.budget_period, start = period_of(self.principal.budget_period, now)
            self.budget_ends = _period_end(self.principal.budget_period, start)
        return self.budget_period


class Limits:
    def __init__(self, counters: Counters, load_spend: SpendLoader) -> None:
        self.counters = counters
        self._load_spend = load_spend
        self._plans: dict[str, _KeyPlan] = {}
        # A key's first burst of budgeted calls loads its period's spend once, not once each.
        self._spend_reads = SingleFlight[tuple[str, float], float]()
        # Long prompts' counts and long lists' (a conversation's), for the next call that
        # resends them.
        self.texts = TextTokens()
        self.lists = RecentLists()

    def plan(self, principal: Principal) -> _KeyPlan:
        """The key's plan, built once per key; a changed key (a new `Principal` for its id) gets
        a new one. It is also the key's `x-ratelimit-*` headers (an `ExtraHeaders`), which the
        edge reads when the key's response starts, whichever response it is."""
        plan = self._plans.get(principal.key_id)
        if plan is None or plan.principal is not principal:
            if len(self._plans) >= 100_000:
                self._plans.clear()
            plan = self._plans[principal.key_id] = _KeyPlan(self, principal)
        return plan

    @staticmethod
    def applies(principal: Principal, entry: ModelEntry | None) -> bool:
        if principal.rpm or principal.tpm or principal.budget is not None:
            return True
        return entry is not None and bool(entry.rpm or entry.tpm)

    async def admit(
        self, principal: Principal, entry: ModelEntry | None, tokens: float = 0.0, cost: float = 0.0
    ) -> Ticket | None:
        """Take the call's share of every limit that applies, or raise 429 (`RateLimited`,
        with an honest Retry-After) / `BudgetExceeded` (no retry helps). Returns what must be
        settled when the call ends, or None when nothing needs settling."""
        ticket = self.admit_now(principal, entry, tokens, cost)
        if ticket is not PENDING:
            return ticket
        return await self.admit_pending(principal, entry, tokens, cost)

    async def admit_pending(
        self, principal: Principal, entry: ModelEntry | None, tokens: float = 0.0, cost: float = 0.0
    ) -> Ticket | None:
        """`admit` after `admit_now` answered `PENDING`: every demand decided by the backend."""
        demands, corrects = self._demands(principal, entry, tokens, cost)
        refusal = await self.counters.take(demands)
        if refusal is not None and refusal.unseeded:
            _, start = period_of(principal.budget_period, time.time())
            key_id = principal.key_id
            spent = await self._spend_reads.run((key_id, start), lambda: self._load_spend(key_id, start))
            for i in refusal.unseeded:
                await self.counters.seed(demands[i].name, demands[i].period, spent)
            refusal = await self.counters.take(demands)
        if refusal is not None:
            self._refuse(principal, demands, refusal)
        return Ticket(demands, tokens, cost) if corrects else None

    def admit_now(
        self, principal: Principal, entry: ModelEntry | None, tokens: float = 0.0, cost: float = 0.0
    ) -> Ticket | None:
        """`admit` decided without awaiting, for a key's own limits on this node's counters
        (the model has none): one call takes them all. `PENDING` when it cannot decide so (a
        refusal, a budget not loaded yet, the model's limits, Redis): then await `admit`."""
        plan = self.plan(principal)
        slots = plan.slots
        if slots is None or (entry is not None and (entry.rpm or entry.tpm)):
            return PENDING
        return self._take_now(plan, slots, tokens, cost)

    def admit_call(
        self, principal: Principal, entry: ModelEntry, payload: Any, output_estimate: int
    ) -> Ticket | None:
        """A synchronous call's admission in one call: None when no limit applies (`applies`),
        else `admit_now` with the call's `estimate`, which is only worked out when `admit_now`
        can decide (`PENDING` otherwise: then `estimate` and await `admit_pending`)."""
        if not (principal.rpm or principal.tpm or principal.budget is not None):
            return PENDING if entry.rpm or entry.tpm else None
        if entry.rpm or entry.tpm:
            return PENDING
        # `plan`'s lookup written out: this runs on every limited call.
        plan = self._plans.get(principal.key_id)
        if plan is None or plan.principal is not principal:
            plan = self.plan(principal)
        slots = plan.slots
        if slots is None:
            return PENDING
        tokens, cost = self.estimate(principal, entry, payload, output_estimate)
        return self._take_now(plan, slots, tokens, cost)

    def estimate(
        self, principal: Principal, entry: ModelEntry, payload: Any, output_estimate: int
    ) -> tuple[float, float]:
        """What a call is expected to use: its prompt counted locally plus its output cap (or,
        for the price, `output_estimate` tokens when it sets none) as tokens, and what that
        would cost. Only a call whose key or model counts tokens, or whose budget pays by the
        token, has its prompt counted."""
        prices = entry.prices
        if payload is not None and (
            principal.tpm
            or entry.tpm
            or (principal.budget is not None and (prices.input_per_million or prices.output_per_million))
        ):
            prompt, cap = prompt_tokens(payload, self.texts, 0, self.lists), output_cap(payload)
            return prompt + (cap or 0), prices.cost(prompt, output_estimate if cap is None else cap)
        return 0, prices.per_call

    def _take_now(self, plan: _KeyPlan, slots: KeySlots, tokens: float, cost: float) -> Ticket | None:
        now = time.time()
        period = 0
        if plan.principal.budget is not None:
            # `plan.period`'s test written out: a new period is looked up once per period.
            period = plan.budget_period if now < plan.budget_ends else plan.period(now)
        if not slots.take(tokens, cost, period, now):
            return PENDING
        return Ticket(_NO_DEMANDS, tokens, cost, False, slots, period) if slots.corrects else None

    def settle_now(self, ticket: Ticket | None, tokens: float = 0.0, cost: float = 0.0) -> bool:
        """`settle` without awaiting for a ticket `admit_now` gave (or none: nothing to settle);
        False (nothing done) for any other: await `settle`."""
        if ticket is None:
            return True
        slots = ticket.slots
        if slots is None:
            return False
        if not ticket.settled:
            ticket.settled = True
            moved_tokens, moved_cost = tokens - ticket.tokens, cost - ticket.cost
            if moved_tokens or moved_cost:
                slots.adjust(moved_tokens, moved_cost, ticket.period, time.time())
        return True

    async def settle(self, ticket: Ticket | None, tokens: float = 0.0, cost: float = 0.0) -> None:
        """Replace the ticket's estimates by what the call used. Once: later calls are no-ops."""
        if ticket is None or ticket.settled or self.settle_now(ticket, tokens, cost):
            return
        ticket.settled = True
        tokens_moved, cost_moved = tokens != ticket.tokens, cost != ticket.cost
        if not (tokens_moved or cost_moved):
            return
        # The ticket's own demands become the corrections (settled once, they are not read
        # again): their names, limits, periods and `local` marks are already right.
        changes = []
        for d in ticket.demands:
            if tokens_moved and d.name.endswith(":tpm"):
                d.amount = tokens - ticket.tokens
                changes.append(d)
            elif cost_moved and d.kind == "budget":
                d.amount = cost - ticket.cost
                changes.append(d)
        if changes:
            await self.counters.adjust(changes)

    async def refund(self, principal: Principal, amount: float, at: float) -> None:
        """Give back money charged at time `at` (a failed task's price), if its period is
        still the current one."""
        if principal.budget is None or amount <= 0:
            return
        period, _ = period_of(principal.budget_period, at)
        name = self.plan(principal).budget_name
        await self.counters.adjust([Demand(name, "budget", principal.budget, -amount, period)])

    def _demands(
        self, principal: Principal, entry: ModelEntry | None, tokens: float, cost: float
    ) -> tuple[list[Demand], bool]:
        plan = self.plan(principal)
        out: list[Demand] = []
        corrects = False
        if principal.rpm:
            out.append(Demand(plan.rpm_name, "rate", principal.rpm, 1))
        if principal.tpm:
            out.append(Demand(plan.tpm_name, "rate", principal.tpm, tokens))
            corrects = True
        if entry is not None:
            if entry.rpm:
                out.append(Demand(f"model:{entry.name}:rpm", "rate", entry.rpm, 1))
            if entry.tpm:
                out.append(Demand(f"model:{entry.name}:tpm", "rate", entry.tpm, tokens))
                corrects = True
        if principal.budget is not None:
            out.append(Demand(plan.budget_name, "budget", principal.budget, cost, plan.period(time.time())))
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


_NO_DEMANDS: Final[list[Demand]] = []  # a ticket of the key's slots names no demands (never appended to)
_REQUESTS: Final = (
    b"x-ratelimit-limit-requests",
    b"x-ratelimit-remaining-requests",
    b"x-ratelimit-reset-requests",
)
_TOKENS: Final = (b"x-ratelimit-limit-tokens", b"x-ratelimit-remaining-tokens", b"x-ratelimit-reset-tokens")


class _RateHeaders:
    """One rate limit's three headers: its `names`, its limit preformatted (`limit_header`), and
    `template`, its three lines with the remaining count and the reset left to `fill`."""

    __slots__ = ("limit", "limit_header", "names", "template")

    def __init__(self, names: tuple[bytes, bytes, bytes], limit: int) -> None:
        self.limit = limit
        self.names = names
        self.limit_header = (names[0], b"%d" % limit)
        # The remaining count and the reset are left as `%d` and `%s` to fill.
        self.template = b"%s: %d\r\n%s: %%d\r\n%s: %%s\r\n" % (names[0], limit, names[1], names[2])

    def fill(self, tat: float, now: float) -> tuple[int, bytes]:
        """(what remains of the limit, never below 0; the reset) for a counter whose arrival
        time is `tat`, at `now`: what `template` is filled with. A counter back to full (a quiet
        or well-inside-its-limit key's common case) costs a comparison."""
        if tat <= now:
            return self.limit, b"0ms"
        ahead = tat - now
        remaining = int((WINDOW - ahead) * self.limit / WINDOW + 1e-9)
        # `format_reset`'s first case written out: a counter nearly back to full.
        return remaining if remaining > 0 else 0, b"0ms" if ahead < 0.0005 else format_reset(ahead)


def _rate_header_head(names: tuple[bytes, bytes, bytes], limit: int | None) -> _RateHeaders | None:
    return _RateHeaders(names, limit) if limit else None


def _period_end(kind: str, start: float) -> float:
    """When the budget period that began at `start` ends (never for a lifetime budget)."""
    if kind == "daily":
        return start + 86400.0
    if kind == "monthly":
        d = dt.datetime.fromtimestamp(start, dt.UTC)
        year, month = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
        return dt.datetime(year, month, 1, tzinfo=dt.UTC).timestamp()
    return math.inf


def _period_word(kind: str) -> str:
    return {"daily": "daily ", "monthly": "monthly "}.get(kind, "")
