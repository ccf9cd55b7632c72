"""A key's own counters (requests and tokens per minute, budget) in this node's table, admitted
together in one call and settled in one: a limited call's common case (a key with limits, a
model without) decided without a `Demand` per counter, a coroutine or a name lookup per call.

The arithmetic, the slots and their layout are `LocalCounters.take_now` / `adjust_now`'s
(backend.py, counters.py), so this path and the generic one read and write the same counters
to the last bit. What this path does not decide itself (a refusal, whose wait and message the
generic path works out, or a budget not seeded for its period yet) it leaves untouched: the
caller then takes the generic path from the start.
"""

from __future__ import annotations

from unigate.limits.counters import WINDOW
from unigate.limits.shared_table import MemoryTable, SharedTable

_FITS = WINDOW + 1e-9  # `rate_take`'s bound: a counter may run one window (and its epsilon) ahead
_SEEDED = 1  # backend.py's flag of a budget slot whose spend has been loaded


class KeySlots:
    """The rpm, tpm and budget counters of one key (a limit the key lacks has no slot: -1),
    read and written by byte offset through the table's `get` and `put`. Slots are claimed at
    the first admission, under the table's lock, and never move."""

    __slots__ = ("_names", "_rpm_step", "_tpm_step", "budget", "corrects", "offs", "table")

    def __init__(
        self,
        table: SharedTable | MemoryTable,
        names: tuple[str, str, str],
        rpm: int | None,
        tpm: int | None,
        budget: float | None,
    ) -> None:
        self.table = table
        # Only the names of the limits the key has are claimed.
        self._names = (
            names[0] if rpm else "",
            names[1] if tpm else "",
            names[2] if budget is not None else "",
        )
        # The claimed slots (None before the first admission): the headers read them too.
        self.offs: tuple[int, int, int] | None = None
        self._rpm_step = WINDOW / rpm if rpm else 0.0  # seconds one request moves the counter
        self._tpm_step = WINDOW / tpm if tpm else 0.0
        self.budget = budget if budget is not None else 0.0
        self.corrects = bool(tpm) or budget is not None  # a settlement replaces the estimates

    def _claim(self) -> tuple[int, int, int]:
        """The byte offsets of the slots' values (`table.get`, `table.put`), -1 for a limit
        the key lacks or a full table (that counter is then not enforced, as `take_now` does)."""
        table = self.table
        offs = []
        for name in self._names:
            off = table.offset(name) if name else -1
            offs.append(table.at(off) if off >= 0 else -1)
        return offs[0], offs[1], offs[2]

    def take(self, tokens: float, cost: float, period: int, now: float) -> bool:
        """Take one request, `tokens` and `cost` at once: True when all fit (written); False
        when nothing was taken and the generic path must decide (a refusal, an unseeded budget)."""
        table = self.table
        locking = table.locking
        if locking:
            table.lock()
        try:
            offs = self.offs
            if offs is None:
                offs = self.offs = self._claim()
            rpm_off, tpm_off, budget_off = offs
            read = table.get
            if rpm_off >= 0:
                rpm = read(rpm_off)
                tat = rpm[0]
                rpm_tat = (tat if tat > now else now) + self._rpm_step
                if rpm_tat - now > _FITS:
                    return False
            if tpm_off >= 0:
                tpm = read(tpm_off)
                tat = tpm[0]
                tpm_tat = (tat if tat > now else now) + tokens * self._tpm_step
                if tpm_tat - now > _FITS:
                    return False
            if budget_off >= 0:
                spent, b, held, flags = read(budget_off)
                if not flags & _SEEDED or held > period:
                    return False
                if held < period:
                    spent = 0.0  # a new day or month: the old period's spend no longer counts
                if spent + cost > self.budget + 1e-12:
                    return False
                table.put(budget_off, spent + cost, b, period, flags)
            write = table.put
            if rpm_off >= 0:
                write(rpm_off, rpm_tat, rpm[1], rpm[2], rpm[3])
            if tpm_off >= 0:
                write(tpm_off, tpm_tat, tpm[1], tpm[2], tpm[3])
            return True
        finally:
            if locking:
                table.unlock()

    def adjust(self, tokens: float, cost: float, period: int, now: float) -> None:
        """Settle: move the tokens counter by `tokens` and the budget by `cost` (either may be
        0.0: left alone), as `LocalCounters.adjust_now` moves them."""
        offs = self.offs
        if offs is None:
            return
        _, tpm_off, budget_off = offs
        table = self.table
        locking = table.locking
        if locking:
            table.lock()
        try:
            if tokens and tpm_off >= 0:
                tat, b, held, flags = table.get(tpm_off)
                moved = (tat if tat > now else now) + tokens * self._tpm_step
                table.put(tpm_off, moved if moved > now else now, b, held, flags)
            if cost and budget_off >= 0:
                spent, b, held, flags = table.get(budget_off)
                if held == period and flags & _SEEDED:
                    # A settlement for an older period changes nothing: that period is over.
                    table.put(budget_off, max(0.0, spent + cost), b, held, flags)
        finally:
            if locking:
                table.unlock()
