"""Route cooldown: a route that fails `after_failures` times in a row is skipped for
`cooldown_seconds`. Per process; a success resets the count."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

log: Final = logging.getLogger("unigate.routing")


class RouteHealth:
    def __init__(self, after_failures: int, cooldown_seconds: float) -> None:
        self._after = after_failures
        self._cooldown = cooldown_seconds
        self._state: dict[str, list[float]] = {}  # key -> [consecutive failures, cooled until]

    def is_cooled(self, key: str, now: float | None = None) -> bool:
        state = self._state.get(key)
        if state is None:
            return False
        return state[1] > (time.monotonic() if now is None else now)

    def success(self, key: str) -> None:
        if key in self._state:
            del self._state[key]

    def failure(self, key: str, now: float | None = None) -> bool:
        """Count a failure; returns True (and logs it) when this failure starts a cooldown."""
        state = self._state.setdefault(key, [0.0, 0.0])
        state[0] += 1
        if state[0] >= self._after:
            state[0] = 0.0
            state[1] = (time.monotonic() if now is None else now) + self._cooldown
            # Per process: every worker cools its own view of the route and says so once.
            log.warning(
                "route %s cooling down for %g s after %d consecutive failure(s)",
                key,
                self._cooldown,
                self._after,
            )
            return True
        return False

    def reconfigure(self, after_failures: int, cooldown_seconds: float, keep: Callable[[str], bool]) -> None:
        """A config reload: new thresholds from now on; the state of the routes `keep` names
        (those the new config still has) stays, the rest is forgotten."""
        self._after = after_failures
        self._cooldown = cooldown_seconds
        self._state = {key: state for key, state in self._state.items() if keep(key)}

    def snapshot(self) -> dict[str, dict[str, float]]:
        now = time.monotonic()
        return {
            key: {"consecutive_failures": s[0], "cooldown_remaining": max(0.0, s[1] - now)}
            for key, s in self._state.items()
        }
