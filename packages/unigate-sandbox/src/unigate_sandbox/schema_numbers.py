"""Numbers for schema example values: a schema's numeric bounds (draft 4 and 6+ exclusive
forms), and checks that a candidate satisfies them and a `multipleOf`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def num(schema: Mapping[str, Any], key: str) -> float | None:
    value = schema.get(key)
    # Absurd magnitudes are ignored rather than risking float overflow in the arithmetic.
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 1e300:
        return value
    return None


def bounds(s: Mapping[str, Any], integral: bool) -> tuple[float | None, float | None]:
    """Inclusive bounds; exclusive ones nudged inward (by 1 for integers, else a little)."""
    low, high = num(s, "minimum"), num(s, "maximum")
    ex_low, ex_high = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    if ex_low is True and low is not None:  # draft 4: booleans qualify minimum/maximum
        ex_low, low = low, None
    if ex_high is True and high is not None:
        ex_high, high = high, None
    gap = 1.0 if integral else 1e-6
    if isinstance(ex_low, int | float) and not isinstance(ex_low, bool):
        nudged = (math.floor(ex_low) + 1) if integral else ex_low + max(gap, abs(ex_low) * 1e-9)
        low = nudged if low is None else max(low, nudged)
    if isinstance(ex_high, int | float) and not isinstance(ex_high, bool):
        nudged = (math.ceil(ex_high) - 1) if integral else ex_high - max(gap, abs(ex_high) * 1e-9)
        high = nudged if high is None else min(high, nudged)
    if integral:
        low = math.ceil(low) if low is not None else None
        high = math.floor(high) if high is not None else None
    return low, high


def int_fits(value: int, low: float | None, high: float | None, step: float | None) -> bool:
    if step is not None and step == int(step):  # exact integer arithmetic when possible
        return float_fits(value, low, high, None) and value % int(step) == 0
    return float_fits(value, low, high, step)


def float_fits(value: float, low: float | None, high: float | None, step: float | None) -> bool:
    if (low is not None and value < low) or (high is not None and value > high):
        return False
    return step is None or value / step == int(value / step)


def multiple_near(start: float, step: float) -> float:
    """The first multiple of a fractional `step` at or above `start` whose float division by
    `step` is exact, so that validators doing `value / step` (jsonschema does) accept it."""
    k = math.ceil(start / step)
    for j in range(k, k + 64):
        value = round(j * step, 12)
        if value / step == int(value / step):
            return value
    return round(k * step, 12)
