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
from typing import Final

WINDOW: Final = 60.0
_EPS: Final = 1e-9


def rate_take(tat: float, limit: float, amount: float, now: float) -> tuple[float, float]:
    """Take `amount` from a rate counter whose stored arrival time is `tat`: (the stored value
    after the decision, the wait). A wait of 0.0 means admitted (the new value is returned);
    otherwise nothing is taken and the wait is the seconds until this amount would pass,
    `inf` when it never can (more than the whole allowance)."""
    interval = WINDOW / limit
    base = tat if tat > now else now
    new_tat = base + amount * interval
    if new_tat - now <= WINDOW + _EPS:
        return new_tat, 0.0
    if amount * interval > WINDOW + _EPS:
        return tat, math.inf
    return tat, new_tat - WINDOW - now


def rate_ahead(tat: float, now: float) -> float:
    """How far the counter is ahead of now: the seconds until it is back to full."""
    return tat - now if tat > now else 0.0


def rate_remaining(limit: float, ahead: float) -> int:
    """Whole units that would still pass now, for a counter `ahead` seconds ahead."""
    return max(0, int((WINDOW - ahead + _EPS) // (WINDOW / limit)))


def rate_adjust(tat: float, limit: float, delta: float, now: float) -> float:
    """Give back (negative `delta`) or charge more of a counter after the fact, e.g. the real
    token count of an answer replacing its admission estimate. Never below `now`: a counter
    already back to full stays full."""
    moved = (tat if tat > now else now) + delta * (WINDOW / limit)
    return moved if moved > now else now


def budget_take(spent: float, limit: float, amount: float) -> tuple[float, bool]:
    """(new spent, admitted): admitted when `amount` fits in what is left of `limit`."""
    if spent + amount <= limit + 1e-12:
        return spent + amount, True
    return spent, False


def format_reset(seconds: float) -> bytes:
    """OpenAI's duration format for `x-ratelimit-reset-*`: `6m0s`, `1.2s`, `20ms`."""
    if seconds < 0.0005:
        return b"0ms"  # a counter back to full (or nearly): the common case of a busy key
    if seconds < 1:
        return b"%dms" % int(seconds * 1000 + 0.5)
    if seconds < 10:
        return b"%.3gs" % seconds
    if seconds < 60:
        return b"%ds" % int(seconds + 0.5)
    minutes, rest = divmod(int(seconds + 0.5), 60)
    return b"%dm%ds" % (minutes, rest)
