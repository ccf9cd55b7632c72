"""Start-up and shutdown as one ordered list of steps, unwound cleanly when a step fails.

A `Step` has a name, what starts it and what stops it (either may be None: a resource made
when the gateway was built only needs stopping). `Lifecycle.start` starts the steps in order;
when one fails, the steps already started are stopped in reverse order and one log line names
the step that failed, why, and what was stopped, before the failure is raised. `stop` stops
the started steps in reverse order; a step whose stop fails does not keep the others from
stopping, and the failures are named in one log line. Nothing is left running or open because
a step in the middle failed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

Action = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    start: Action | None = None
    stop: Action | None = None


class Lifecycle:
    def __init__(self, steps: Sequence[Step], log: logging.Logger, what: str = "start-up") -> None:
        self.steps = list(steps)
        self.log = log
        self.what = what
        self._started: list[Step] | None = None  # None: start was never called

    async def start(self) -> None:
        started: list[Step] = []
        self._started = started
        for step in self.steps:
            try:
                if step.start is not None:
                    await step.start()
            except BaseException as exc:
                stopped, failed = await _stop_all(started)
                undone = ", ".join(stopped) if stopped else "nothing"
                trouble = "; " + ", ".join(failed) + " failed to stop" if failed else ""
                self.log.error(
                    "%s failed at %s (%s); stopped %s, in reverse order%s",
                    self.what,
                    step.name,
                    _reason(exc),
                    undone,
                    trouble,
                )
                self.log.debug("%s failure at %s", self.what, step.name, exc_info=True)
                started.clear()
                raise
            started.append(step)

    async def stop(self) -> None:
        """Stop what started (everything, if `start` never ran), last started first."""
        if self._started is None:
            steps = self.steps
        else:
            steps, self._started = self._started, []
        _stopped, failed = await _stop_all(steps)
        if failed:
            self.log.error("shutdown: %s failed to stop; the other steps stopped", ", ".join(failed))


async def _stop_all(steps: list[Step]) -> tuple[list[str], list[str]]:
    """Stop `steps` in reverse order, each whatever the others did: (stopped, failed) names,
    a failure with its reason."""
    stopped: list[str] = []
    failed: list[str] = []
    for step in reversed(steps):
        if step.stop is None:
            continue
        try:
            await step.stop()
        except Exception as exc:
            failed.append(f"{step.name} ({_reason(exc)})")
        else:
            stopped.append(step.name)
    return stopped, failed


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
