"""A key's own counters (requests and tokens per minute, budget) in this node's table, admitted
together in one call and settled in one: a limited call's common case (a key with limits, a
model without) decided without a `Demand` per counter, a coroutine or a name lookup per call.

The arithmetic, the slots and their layout are `LocalCounters.take_now` / `adjust_now`'s
(backend.py, counters.py), so this path and the generic one read and write the same counters
to the last bit; only the values a decision changes are written, each by one C-level store.
What this path does not decide itself (a refusal, whose wait and message the generic path
works out, or a budget not seeded for its period yet) it leaves untouched: the caller then
takes the generic path from the start.
"""

from __future__ import annotations

from typing import Final

from unigate.limits.counters import WINDOW
from unigate.limits.shared_table import MemoryTable, SharedTable

_FITS: Final = WINDOW + 1e-9  # `rate_take`'s bound: a counter may run one window (and its epsilon) ahead
_SEEDED: Final = 1  # backend.py's flag of a budget slot whose spend has been loaded


class KeySlots:
    """The rpm, tpm and budget counters of one key (a limit the key lacks has no slot: -1),
    read and written one value at a time through the table's 8-byte cells (`floats`, `ints`).
    Slots are claimed at the first admission, under the table's lock, and never move."""

    __slots__ = (
        "_names",
        "_rpm_step",
        "_tpm_step",
        "budget",
        "budget_at",
        "claimed",
        "corrects",
        "floats",
        "ints",
        "rpm_at",
        "table",
        "tpm_at",
    )

    def __init__(
        self,
        table: SharedTable | MemoryTable,
        names: tuple[str, str, str],
        rpm: int | None,
        tpm: int | None,
        budget: float | None,
    ) -> None:
        self.table = table
        self.floats = table.floats
        self.ints = table.ints
        # Only the names of the limits the key has are claimed.
        self._names = (
            names[0] if rpm else "",
            names[1] if tpm else "",
            names[2] if budget is not None else "",
        )
        # The claimed slots' cells (the headers read them too): a rate's arrival time in
        # `floats`; a budget's spend in `floats`, its period and flags two and three cells on in
        # `ints`. -1 for a limit the key lacks, or one a full table has no slot for (that
        # counter is then not enforced, as `take_now` does).
        self.claimed = False
        self.rpm_at = self.tpm_at = self.budget_at = -1
        self._rpm_step = WINDOW / rpm if rpm else 0.0  # seconds one request moves the counter
        self._tpm_step = WINDOW / tpm if tpm else 0.0
        self.budget = budget if budget is not None else 0.0
        self.corrects = bool(tpm) or budget is not None  # a settlement replaces the estimates

    def _claim(self) -> None:
        table = self.table
        cells = []
        for name in self._names:
            off = table.offset(name) if name else -1
            cells.append(table.cell(off) if off >= 0 else -1)
        self.rpm_at, self.tpm_at, self.budget_at = cells
        self.claimed = True

    def take(self, tokens: float, cost: float, period: int, now: float) -> bool:
        """Take one request, `tokens` and `cost` at once: True when all fit (written); False
        when nothing was taken and the generic path must decide (a refusal, an unseeded budget)."""
        table = self.table
        locking = table.locking
        if locking:
            table.lock()
        try:
            if not self.claimed:
                self._claim()
            floats = self.floats
            rpm_at, tpm_at, budget_at = self.rpm_at, self.tpm_at, self.budget_at
            if rpm_at >= 0:
                tat = floats[rpm_at]
                rpm_tat = (tat if tat > now else now) + self._rpm_step
                if rpm_tat - now > _FITS:
                    return False
            if tpm_at >= 0:
                tat = floats[tpm_at]
                tpm_tat = (tat if tat > now else now) + tokens * self._tpm_step
                if tpm_tat - now > _FITS:
                    return False
            if budget_at >= 0:
                ints = self.ints
                held = ints[budget_at + 2]
                if not ints[budget_at + 3] & _SEEDED or held > period:
                    return False
                # From a new day or month on, the old period's spend no longer counts.
                spent = floats[budget_at] if held == period else 0.0
                if spent + cost > self.budget + 1e-12:
                    return False
                floats[budget_at] = spent + cost
                if held != period:
                    ints[budget_at + 2] = period
            if rpm_at >= 0:
                floats[rpm_at] = rpm_tat
            if tpm_at >= 0:
                floats[tpm_at] = tpm_tat
            return True
        finally:
            if locking:
                table.unlock()

    def adjust(self, tokens: float, cost: float, period: int, now: float) -> None:
        """Settle: move the tokens counter by `tokens` and the budget by `cost` (either may be
        0.0: left alone), as `LocalCounters.adjust_now` moves them."""
        if not self.claimed:
            return
        table = self.table
        locking = table.locking
        if locking:
            table.lock()
        try:
            floats = self.floats
            tpm_at, budget_at = self.tpm_at, self.budget_at
            if tokens and tpm_at >= 0:
                tat = floats[tpm_at]
                moved = (tat if tat > now else now) + tokens * self._tpm_step
                floats[tpm_at] = moved if moved > now else now
            if cost and budget_at >= 0:
                ints = self.ints
                if ints[budget_at + 2] == period and ints[budget_at + 3] & _SEEDED:
                    # A settlement for an older period changes nothing: that period is over.
                    spent = floats[budget_at] + cost
                    floats[budget_at] = spent if spent > 0.0 else 0.0
        finally:
            if locking:
                table.unlock()
