"""Added latency below saturation: the same 8 connections as `run.py`'s low-concurrency run,
each paced (wrk's `delay()`, `BENCH_DELAY_MS` in post.lua) so the load stays far below what the
machine serves, against the upstream directly, the bare proxy and unigate (2 workers each, as
operated: a key with rpm, tpm and a budget).

    bash bench/python.sh paced.py [--delays 4 10] [--duration 4]

At 8 unpaced connections the two workers, nginx and wrk saturate a 2-core machine, so latency
there is mostly queueing; paced, what remains is each proxy's own path, and on a VM the cost of
waking the extra processes a proxied request passes through. Traffic stays on 127.0.0.1; every
process started is stopped at the end.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli import BENCH_DIR, log, run_main
from procs import Children
from targets import CHAT_BODY, start_bare_proxy, start_beside
from wrk import run_script

CONNECTIONS = 8


def _paced_run(url: str, key: str, delay_ms: float, duration: float) -> tuple[float, float, float]:
    """p50 and p99 in ms, and requests per second, of one paced wrk run."""
    env = {"BENCH_BODY": CHAT_BODY.decode(), "BENCH_KEY": key, "BENCH_DELAY_MS": f"{delay_ms:g}"}
    result, _ = run_script("wrk", BENCH_DIR / "post.lua", url, duration, CONNECTIONS, 2, env)
    return result.p50_us / 1000, result.p99_us / 1000, result.rps


def bench(args: argparse.Namespace, children: Children, tmp: Path) -> int:
    targets = start_beside(children, tmp, start_bare_proxy)
    log(f"{'delay':>8} {'target':<8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'+p50 ms':>8}")
    for delay in args.delays:
        direct_p50 = 0.0
        for target in targets:
            p50, p99, rps = _paced_run(target.chat_url, target.key or "", delay, args.duration)
            if target is targets[0]:
                direct_p50 = p50
            added = "-" if target is targets[0] else f"{p50 - direct_p50:.3f}"
            log(f"{delay:>6g}ms {target.name:<8} {rps:>8.0f} {p50:>8.3f} {p99:>8.3f} {added:>8}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--delays", type=float, nargs="+", default=[4.0, 10.0], help="ms between requests of a connection"
    )
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per wrk run")
    return run_main("unigate paced benchmark", "unigate-paced-", parser.parse_args(), bench)


if __name__ == "__main__":
    sys.exit(main())
