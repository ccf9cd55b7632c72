"""A `/healthz` latency probe for tests that attack the gateway.

It polls over one kept-alive connection from its own process, so the test's own threads
(building 20 MiB bodies holds the GIL) cannot delay it. On a shared machine the OS also keeps
processes waiting for a CPU; Linux counts that time per thread (`/proc/<pid>/task/*/schedstat`,
the second field: nanoseconds spent runnable but not running). Each poll's `own` latency is its
wall time less what the probe and the gateway's threads spent waiting for a CPU meanwhile: the
time the gateway really took, where a blocked event loop (or a thread holding the GIL while it
runs) shows up.
"""

from __future__ import annotations

import contextlib
import http.client
import multiprocessing
import time
from pathlib import Path
from typing import Any

Poll = tuple[float, float, float]  # (time.monotonic() at its start, wall seconds, own seconds)


class HealthProbe:
    """After `stop()`: `worst` and `worst_own` (seconds), `polls`, `failures` (no 200), and
    `slow`, the polls whose own latency was over `slow_after`."""

    def __init__(
        self, port: int, pid: int | None = None, interval: float = 0.01, slow_after: float = 0.025
    ) -> None:
        self.worst, self.worst_own, self.polls, self.failures = 0.0, 0.0, 0, 0
        self.slow: list[Poll] = []
        ctx = multiprocessing.get_context("spawn")
        self._stop, self._polling = ctx.Event(), ctx.Event()
        self._results, sender = ctx.Pipe(duplex=False)
        args = (port, pid, interval, slow_after, self._stop, self._polling, sender)
        self._process = ctx.Process(target=_probe, args=args, daemon=True, name="healthz-probe")

    def start(self) -> HealthProbe:
        """Start polling; returns once the first poll has been answered."""
        self._process.start()
        self._polling.wait(30)
        return self

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if self._results.poll(15):
            self.worst, self.worst_own, self.polls, self.failures, self.slow = self._results.recv()
        else:
            self.failures += 1  # the probe died or hung: count it, so nothing passes unseen
        self._process.join(10)


def _waits(pid: int | None) -> dict[str, int]:
    """Nanoseconds each thread of the probe and of process `pid` has waited for a CPU so far."""
    paths = [Path("/proc/self/schedstat")]
    if pid:
        paths += Path(f"/proc/{pid}/task").glob("*/schedstat")
    found = {}
    for path in paths:
        with contextlib.suppress(OSError, IndexError, ValueError):  # gone, or no schedstats
            found[str(path)] = int(path.read_text().split()[1])
    return found


def _kept_off(before: dict[str, int], after: dict[str, int]) -> float:
    """Seconds of a poll the OS kept the probe, or the gateway thread it waited on, off the CPU:
    the probe's own wait plus the longest wait of any gateway thread (the event loop, or a
    thread holding the GIL it needs), so waits that overlap are not counted twice."""
    waits = {path: after[path] - before[path] for path in after.keys() & before.keys()}
    probe = waits.pop("/proc/self/schedstat", 0)
    return (probe + max(waits.values(), default=0)) / 1e9


def _probe(
    port: int, pid: int | None, interval: float, slow_after: float, stop: Any, polling: Any, results: Any
) -> None:
    worst = worst_own = 0.0
    polls = failures = 0
    slow: list[Poll] = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    while not stop.is_set():
        waits, started, at = _waits(pid), time.perf_counter(), time.monotonic()
        try:
            conn.request("GET", "/healthz")
            res = conn.getresponse()
            res.read()
            ok = res.status == 200
        except (OSError, http.client.HTTPException):
            ok = False
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        took = time.perf_counter() - started
        own = max(0.0, took - _kept_off(waits, _waits(pid)))
        worst, worst_own = max(worst, took), max(worst_own, own)
        polls, failures = polls + 1, failures + (0 if ok else 1)
        if own > slow_after:
            slow.append((at, took, own))
        polling.set()
        stop.wait(interval)
    conn.close()
    results.send((worst, worst_own, polls, failures, slow))
