"""The one interface every limit and budget goes through, and its single-node backend.

A call's admission is a list of `Demand`s (the key's requests, tokens and money, the model's
requests and tokens) taken **all or nothing** in one atomic step, so a refused call charges
nothing and two calls racing for the last unit cannot both get it. Settling a call adjusts the
same counters by the difference between what was reserved and what was used.

`LocalCounters` keeps the counters in a `SharedTable` that every worker of one `unigate serve`
maps, which makes limits exact across workers without any other service. `RedisCounters`
(redis_counters.py) implements the same methods for several replicas.

These objects are built per request on the hot path, so they are plain slotted dataclasses
(a frozen one costs four times as much to build).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from unigate.limits.counters import budget_take, rate_adjust, rate_ahead, rate_take
from unigate.limits.shared_table import MemoryTable, SharedTable

Kind = Literal["rate", "budget"]


@dataclass(slots=True)
class Demand:
    name: str  # the counter, e.g. "key:<id>:rpm"
    kind: Kind
    limit: float  # per minute for a rate, per period for a budget
    amount: float  # what the call takes (a settlement's correction: may be negative)
    period: int = 0  # budgets: the period index the amount belongs to
    # Admitted by a node-local fallback rather than the shared backend (Redis down), so its
    # settlement goes to the same place.
    local: bool = False


@dataclass(slots=True)
class Refusal:
    """Why `take` admitted nothing."""

    refused: int = -1  # index of the first demand that did not fit (-1: see `unseeded`)
    wait: float = 0.0  # refused by a rate: seconds until the call would pass (inf: never)
    unseeded: list[int] = field(default_factory=list)  # budgets whose spend is not loaded yet


class Counters(Protocol):
    async def take(self, demands: Sequence[Demand]) -> Refusal | None:
        """Admit all demands (None) or none (why not). A budget counter not yet seeded for its
        period is reported in `unseeded` so the caller can load its spend and try again."""
        ...

    async def adjust(self, changes: Sequence[Demand]) -> None:
        """Add each change's amount to its counter (negative: give back)."""
        ...

    async def seed(self, name: str, period: int, spent: float) -> None:
        """Set a budget's spend for `period` from durable records, unless already seeded."""
        ...

    def ahead(self, name: str) -> float:
        """A rate counter's seconds ahead of now, taking nothing (for headers)."""
        ...

    async def flush(self) -> None:
        """Send what `adjust` queued (at shutdown)."""
        ...

    def close(self) -> None: ...


_SEEDED = 1


def counters_path(data_dir: Path) -> Path:
    """Where the workers of one `serve` share their counters (fresh at each start)."""
    return data_dir / "limits.bin"


class LocalCounters:
    """Counters for the workers of one `unigate serve` (see `SharedTable`). `shared=False`
    (a single worker process) keeps them in memory: one event loop thread is atomic enough."""

    def __init__(self, path: Path, shared: bool = True) -> None:
        self.table: SharedTable | MemoryTable = SharedTable(path) if shared else MemoryTable()

    async def take(self, demands: Sequence[Demand]) -> Refusal | None:
        return self.take_now(demands, time.time())

    def take_now(self, demands: Sequence[Demand], now: float) -> Refusal | None:
        table = self.table
        locking = table.locking  # tested here, not in a call: this runs on every limited request
        if locking:
            table.lock()
        try:
            writes: list[tuple[int, float, float, int, int]] = []
            unseeded: list[int] = []
            for i, demand in enumerate(demands):
                off = table.offset(demand.name)
                if off < 0:
                    continue
                a, b, period, flags = table.read(off)
                if demand.kind == "rate":
                    new_tat, wait = rate_take(a, demand.limit, demand.amount, now)
                    if wait:
                        return Refusal(i, wait)
                    writes.append((off, new_tat, b, period, flags))
                    continue
                if not flags & _SEEDED or period > demand.period:
                    unseeded.append(i)
                    continue
                if period < demand.period:
                    # A new day or month: the old period's spend no longer counts.
                    a, period = 0.0, demand.period
                spent, ok = budget_take(a, demand.limit, demand.amount)
                if not ok:
                    return Refusal(i)
                writes.append((off, spent, b, period, flags | _SEEDED))
            if unseeded:
                return Refusal(-1, 0.0, unseeded)
            for off, a, b, period, flags in writes:
                table.write(off, a, b, period, flags)
            return None
        finally:
            if locking:
                table.unlock()

    async def adjust(self, changes: Sequence[Demand]) -> None:
        self.adjust_now(changes, time.time())

    def adjust_now(self, changes: Sequence[Demand], now: float) -> None:
        table = self.table
        with table.locked():  # not per request: corrections and seeds only
            for change in changes:
                off = table.offset(change.name)
                if off < 0:
                    continue
                a, b, period, flags = table.read(off)
                if change.kind == "rate":
                    table.write(off, rate_adjust(a, change.limit, change.amount, now), b, period, flags)
                elif period == change.period and flags & _SEEDED:
                    # A settlement for an older period changes nothing: that period is over.
                    table.write(off, max(0.0, a + change.amount), b, period, flags)

    async def seed(self, name: str, period: int, spent: float, force: bool = False) -> None:
        """`force`: replace even a seeded figure (a fallback taking over from Redis reloads
        what every replica spent meanwhile)."""
        table = self.table
        with table.locked():
            off = table.offset(name)
            if off < 0:
                return
            _, b, held, flags = table.read(off)
            if force or held != period or not flags & _SEEDED:
                table.write(off, spent, b, period, flags | _SEEDED)

    def ahead(self, name: str) -> float:
        table = self.table
        # Only reads, so no lock: a slot, once claimed, never moves; a counter with no slot
        # yet has taken nothing.
        off = table.offset(name, claim=False)
        if off < 0:
            return 0.0
        # One aligned 8-byte read: at worst a header shows the value a concurrent admission
        # just replaced.
        return rate_ahead(table.read(off)[0], time.time())

    async def flush(self) -> None:
        pass  # nothing is queued: every change is applied at once

    def close(self) -> None:
        self.table.close()
