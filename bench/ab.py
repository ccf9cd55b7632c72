"""Served CPU per request of this tree against another, interleaved: the A/B of a change that
touches the request path.

    git worktree add /tmp/base HEAD~1          # the code before the change
    bash bench/python.sh ab.py /tmp/base/src [--rounds 4] [--duration 5] [--connections 32]

Starts the fast local upstream once, then, round after round, `unigate serve` from the other
tree and from this one in turn (the same operated configuration as `run.py`: a key with rpm,
tpm and a budget, usage accounting, metrics, the request log and access lines; one worker by
default, so the figure is one process's), drives each with wrk and reads the CPU time its
worker process(es) used per request. Rounds alternate so the machine's drift falls on both;
compare the medians, and the pairs of each round (a quiet 2-core VM moves ±5% between runs of
the same code). `bench/overhead.py` prices the same path in process, where a change can look
smaller: under load a request's code runs with cold caches, and work moved out of the request
(into a batch per loop turn) or memory no longer held shows up only here. Traffic stays on
127.0.0.1; every process started is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from cli import BENCH_DIR, log
from procs import BenchError, Children, cpu_seconds, stop, wait_ready, worker_pids
from targets import CHAT_BODY, start_unigate
from upstream import start_upstream
from wrk import run_wrk

THIS_TREE = BENCH_DIR.parent / "src"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="the other tree's src directory (holding unigate/)")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds (default 4)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measured wrk run")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (default 32)")
    parser.add_argument("--workers", type=int, default=1, help="unigate workers (default 1)")
    args = parser.parse_args(argv)
    if not (args.base / "unigate" / "__init__.py").is_file():
        parser.error(f"{args.base} holds no unigate package: give a checkout's src directory")
    return args


def _measure(
    children: Children, tmp: Path, upstream_port: int, src: Path, args: argparse.Namespace
) -> tuple[float, float]:
    """(requests per second, worker CPU µs per request) of `unigate serve` run from `src`."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(src)  # before the venv's own install of this tree
    try:
        target = start_unigate(children, tmp, upstream_port, workers=args.workers)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    assert target.child is not None  # unigate's target always has its process
    try:
        pids = worker_pids(target.child.pid) or [target.child.pid]
        run_wrk("wrk", target.chat_url, CHAT_BODY, target.key or "", 2, args.connections, 1)  # warm-up
        before = cpu_seconds(pids)
        result = run_wrk(
            "wrk", target.chat_url, CHAT_BODY, target.key or "", args.duration, args.connections, 1
        )
        used = cpu_seconds(pids) - before
    finally:
        stop(target.child)
    errors = sum(result.errors.values(), 0)
    if result.requests == 0 or errors:
        raise BenchError(f"unigate from {src}: {result.requests} requests, errors {result.errors}")
    return result.rps, used / result.requests * 1e6


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    trees = {"base": args.base.resolve(), "this": THIS_TREE}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    children = Children()
    tmp = Path(tempfile.mkdtemp(prefix="unigate-ab-"))
    try:
        upstream = start_upstream(children, tmp)
        wait_ready(upstream.child, upstream.port, "/", want=None)
        for round_no in range(1, args.rounds + 1):
            for name, src in trees.items():
                run_dir = tmp / f"{name}-{round_no}"
                run_dir.mkdir()
                rps, cpu = _measure(children, run_dir, upstream.port, src, args)
                figures[name].append((rps, cpu))
                log(f"round {round_no} {name}: {rps:,.0f} req/s, {cpu:.1f} us of CPU per request")
    except BenchError as exc:
        log(f"benchmark could not run: {exc}")
        return 2
    finally:
        children.stop_all()
    for name, runs in figures.items():
        rps = statistics.median(r for r, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        log(f"{name}: median {rps:,.0f} req/s, {cpu:.1f} us of CPU per request ({trees[name]})")
    base_cpu = statistics.median(c for _, c in figures["base"])
    this_cpu = statistics.median(c for _, c in figures["this"])
    log(f"this - base: {this_cpu - base_cpu:+.1f} us of CPU per request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
