"""Requests-per-minute limit per key: a sliding-window counter (two fixed windows weighted),
O(1) time and memory per key, no allocation on the hot path after the first request.

This limiter is per process; several workers or replicas need the shared Redis limiter."""

from __future__ import annotations

import math
import time

from unigate.errors import RateLimited

_WINDOW = 60.0


class RateLimiter:
    def __init__(self) -> None:
        # key_id -> [window index, count in window, count in previous window]
        self._windows: dict[str, list[int]] = {}

    def hit(self, key_id: str, rpm: int, now: float | None = None) -> int:
        """Count one request; returns the remaining allowance or raises 429."""
        now = time.time() if now is None else now
        index = int(now // _WINDOW)
        state = self._windows.get(key_id)
        if state is None:
            state = self._windows[key_id] = [index, 0, 0]
        elif state[0] != index:
            state[2] = state[1] if state[0] == index - 1 else 0
            state[0], state[1] = index, 0
        elapsed = (now - index * _WINDOW) / _WINDOW
        estimate = state[2] * (1.0 - elapsed) + state[1]
        if estimate + 1 > rpm:
            retry = max(1, math.ceil((1.0 - elapsed) * _WINDOW)) if state[1] >= rpm else 1
            raise RateLimited(
                f"Rate limit of {rpm} requests per minute reached for this key.",
                headers={"retry-after": str(retry)},
            )
        state[1] += 1
        return max(0, int(rpm - estimate - 1))
