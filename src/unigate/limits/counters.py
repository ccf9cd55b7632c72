"""The arithmetic of the two kinds of counter every limit is made of, shared by the backends
(the local shared-memory table, and Redis for replicas) so they agree to the last decimal.

A **rate** counter (requests or tokens per minute) is a GCRA: it keeps one number, the
theoretical arrival time `tat`. Each unit of `amount` costs `60 / limit` seconds; an amount is
admitted when the new `tat` is at most one window (60 s) ahead of now. So `limit` units pass at
once (the burst), then one more every `60 / limit` s, and a refused request is told exactly
when it would pass (`retry_after`), unlike fixed windows whose advertised wait may still be
refused.

A **budget** counter (money per period) keeps what was spent in the current period; an amount
is admitted when it fits in what is left. The period is an integer index (the day, the month,
or 0 for a lifetime budget); a counter from an older period counts as empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

WINDOW = 60.0


@dataclass(frozen=True, slots=True)
class RateState:
    """A rate counter's figures after a decision, for the `x-ratelimit-*` headers."""

    allowed: bool
    remaining: int  # whole units that would still pass now
    reset: float  # seconds until the counter is back to its full allowance
    retry_after: float  # seconds until this amount would pass (0 when allowed)


def rate_take(tat: float, limit: float, amount: float, now: float) -> tuple[float, RateState]:
    """Take `amount` from a rate counter whose stored arrival time is `tat`.
    Returns the new stored value (unchanged when refused) and the decision."""
    interval = WINDOW / limit
    base = tat if tat > now else now
    new_tat = base + amount * interval
    if new_tat - now <= WINDOW + 1e-9:
        return new_tat, _state(True, new_tat, interval, now, 0.0)
    wait = new_tat - WINDOW - now
    # An amount larger than the whole allowance can never pass: no honest wait exists.
    retry = math.inf if amount * interval > WINDOW + 1e-9 else wait
    return tat, _state(False, base, interval, now, retry)


def rate_peek(tat: float, limit: float, now: float) -> RateState:
    """The counter's figures without taking anything."""
    interval = WINDOW / limit
    return _state(True, tat if tat > now else now, interval, now, 0.0)


def rate_adjust(tat: float, limit: float, delta: float, now: float) -> float:
    """Give back (negative `delta`) or charge more of a counter after the fact, e.g. the real
    token count of an answer replacing its admission estimate. Never below `now`: a counter
    already back to full stays full."""
    moved = (tat if tat > now else now) + delta * (WINDOW / limit)
    return moved if moved > now else now


def _state(allowed: bool, tat: float, interval: float, now: float, retry: float) -> RateState:
    ahead = tat - now
    remaining = int((WINDOW - ahead + 1e-9) // interval)
    return RateState(allowed, max(0, remaining), max(0.0, ahead), retry)


def budget_take(spent: float, limit: float, amount: float) -> tuple[float, bool]:
    """(new spent, admitted): admitted when `amount` fits in what is left of `limit`."""
    if spent + amount <= limit + 1e-12:
        return spent + amount, True
    return spent, False


def format_reset(seconds: float) -> str:
    """OpenAI's duration format for `x-ratelimit-reset-*`: `6m0s`, `1.2s`, `20ms`."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    if seconds < 60:
        return f"{seconds:.3g}s" if seconds < 10 else f"{round(seconds)}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest}s"
