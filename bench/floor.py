"""What this machine charges any Python proxy: the upstream directly, the least-work proxy
(`floor_proxy.py`: uvloop callbacks and framing only) and unigate as operated (a key with rpm,
tpm and a budget), 2 workers each, driven in interleaved rounds at 8 and at 64 connections.

    bash bench/python.sh floor.py [--rounds 3] [--duration 3]

Per target and load it prints the median round's p50, the p50 added over the upstream's, the
requests a second and the workers' CPU per request (user and system apart, from /proc): how far
the added-latency target at 8 connections sits above the floor, and how much of a request's cost
at low concurrency is the kernel's (waking the process a write is for) rather than the proxy's.
Traffic stays on 127.0.0.1; every process started is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cli import log, run_main
from procs import BenchError, Children, worker_pids
from targets import CHAT_BODY, Target, start_beside, start_floor_proxy
from wrk import run_wrk

LOADS = (8, 64)
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Round:
    p50_us: float
    rps: float
    user_us: float  # the workers' CPU per request
    system_us: float


def _cpu(pids: Sequence[int]) -> tuple[int, int]:
    """User and system clock ticks so far, summed over `pids`."""
    user = system = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        user, system = user + int(fields[11]), system + int(fields[12])
    return user, system


def _round(target: Target, connections: int, duration: float) -> Round:
    assert target.child is not None
    pids = worker_pids(target.child.pid)
    before = _cpu(pids)
    result = run_wrk("wrk", target.chat_url, CHAT_BODY, target.key, duration, connections, 2)
    if result.failed:
        raise BenchError(f"{target.name}: {result.failed} failed requests ({result.errors})")
    after = _cpu(pids)
    per_request = 1e6 / _TICKS / max(result.requests, 1)
    user, system = ((a - b) * per_request for a, b in zip(after, before, strict=True))
    return Round(result.p50_us, result.rps, user, system)


def _median_round(rounds: list[Round]) -> Round:
    """The round with the median p50, with the rounds' median CPU figures."""
    middle = sorted(rounds, key=lambda r: r.p50_us)[len(rounds) // 2]
    user = statistics.median(r.user_us for r in rounds)
    system = statistics.median(r.system_us for r in rounds)
    return Round(middle.p50_us, middle.rps, user, system)


def bench(args: argparse.Namespace, children: Children, tmp: Path) -> int:
    targets = start_beside(children, tmp, start_floor_proxy)
    for target in targets:  # warm-up: connections, caches, unigate's key
        _round(target, LOADS[-1], 1.0)
    runs: dict[tuple[str, int], list[Round]] = {}
    for n in range(args.rounds):
        log(f"Round {n + 1} of {args.rounds} ...")
        for connections in LOADS:
            for target in targets:
                runs.setdefault((target.name, connections), []).append(
                    _round(target, connections, args.duration)
                )
    columns = ("req/s", "p50 ms", "+p50 ms", "user us", "sys us")
    log(f"{'target':<8} {'load':>5} " + " ".join(f"{c:>8}" for c in columns))
    for connections in LOADS:
        direct = _median_round(runs[("direct", connections)])
        for target in targets:
            r = _median_round(runs[(target.name, connections)])
            added = "-" if target is targets[0] else f"{(r.p50_us - direct.p50_us) / 1000:.3f}"
            log(
                f"{target.name:<8} {'c' + str(connections):>5} {r.rps:>8.0f} {r.p50_us / 1000:>8.3f} "
                f"{added:>8} {r.user_us:>8.1f} {r.system_us:>8.1f}"
            )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per wrk run")
    return run_main("unigate floor benchmark", "unigate-floor-", parser.parse_args(), bench)


if __name__ == "__main__":
    sys.exit(main())
