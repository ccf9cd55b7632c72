"""unigate benchmark: the same load at the fake upstream, a bare proxy and unigate, in one run.

    bash bench/run.sh [--duration 8] [--quick] [--connections 64]

Starts nginx (or a Python fallback) as a fast local OpenAI-compatible upstream, the bare
uvicorn + raw ASGI + aiohttp pass-through proxy (`bare_proxy.py`) and `unigate serve` with
one worker, an rpm-limited key and usage accounting. Drives each with wrk at one connection
and at many, measures streaming time to first byte, reads worker RSS, prints the comparison
and the DESIGN §8 verdict, and writes `bench/results/latest.json`. Traffic stays on
127.0.0.1; every process started is stopped at the end. Exit status: 0 if all targets are
met, 1 if one is missed, 2 if the benchmark could not run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from procs import (
    BenchError,
    Children,
    cpu_seconds,
    own_cpu_seconds,
    rss_kb,
    system_busy_seconds,
    wait_ready,
    worker_pids,
)
from report import TARGETS, Rss, Runs, print_report, summarize
from targets import (
    CHAT_BODY,
    STREAM_BODY,
    Target,
    check_reply,
    direct_target,
    recorded_requests,
    start_bare_proxy,
    start_unigate,
)
from ttfb import Sample, measure_ttfb
from upstream import Upstream, ensure_binary, start_upstream, tool_version
from wrk import WrkResult, run_wrk

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results" / "latest.json"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark unigate against a bare proxy (DESIGN §8).")
    parser.add_argument("--duration", type=float, default=8.0, help="Seconds per wrk run (default 8).")
    parser.add_argument("--quick", action="store_true", help="3 s runs and fewer TTFB samples.")
    parser.add_argument(
        "--connections", type=int, default=64, help="Connections for the high-concurrency runs (default 64)."
    )
    args = parser.parse_args()
    if args.quick:
        args.duration = 3.0
    if args.duration < 1 or args.connections < 1:
        parser.error("--duration must be >= 1 and --connections >= 1")
    return args


def _log(message: str) -> None:
    print(message, flush=True)


def _git_revision() -> str:
    root = BENCH_DIR.parent
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("-dirty" if dirty else "")


def _workers(target: Target) -> list[int]:
    assert target.child is not None
    return worker_pids(target.child.pid)


def _sample_rss(targets: list[Target], rss: Rss, phase: str) -> None:
    for target in targets:
        pids = _workers(target)
        rss.setdefault(target.name, {})[phase] = {pid: kb for pid in pids if (kb := rss_kb(pid)) is not None}


def _wrk_all(
    wrk: str, targets: list[Target], duration: float, connections: int, threads: int
) -> dict[str, WrkResult]:
    results = {}
    for target in targets:
        pids = _workers(target)
        cpu_before = cpu_seconds(pids)
        r = run_wrk(wrk, target.chat_url, CHAT_BODY, target.key, duration, connections, threads)
        cpu_used = cpu_seconds(pids) - cpu_before
        r = dataclasses.replace(r, server_cpu_us=cpu_used / max(r.requests, 1) * 1e6)
        if r.failed:
            raise BenchError(f"{target.name}: {r.failed} failed requests under load ({r.errors})")
        _log(
            f"  {target.name:<8} t{r.threads} c{r.connections}: {r.rps:>9,.0f} req/s  "
            f"p50 {r.p50_us / 1000:.3f} ms  p99 {r.p99_us / 1000:.3f} ms  "
            f"server CPU {r.server_cpu_us:.0f} us/req"
        )
        results[target.name] = r
    return results


@dataclass
class Plan:
    duration: float
    warmup: float
    connections: int
    high_threads: int
    ttfb_count: int
    ttfb_warmup: int


@dataclass
class Measurements:
    runs: Runs = field(default_factory=dict)
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    rss: Rss = field(default_factory=dict)
    other_load_cores: float = 0.0
    gateway_answered: int = 0  # unigate responses the clients counted (wrk, TTFB)


def _start_servers(children: Children, tmp: Path) -> tuple[Upstream, list[Target]]:
    _log("Starting the fake upstream, the bare proxy and unigate ...")
    upstream = start_upstream(children, tmp)
    wait_ready(upstream.child, upstream.port, "/", want=None)
    targets = [
        direct_target(upstream.child, upstream.port),
        start_bare_proxy(children, tmp, upstream.port),
        start_unigate(children, tmp, upstream.port),
    ]
    assert [t.name for t in targets] == list(TARGETS)
    for target in targets:
        check_reply(target)
    _log(
        f"  upstream {upstream.kind} on :{upstream.port}, bare proxy on :{targets[1].port}, "
        f"unigate on :{targets[2].port}"
    )
    return upstream, targets


def _measure(wrk: str, targets: list[Target], plan: Plan) -> Measurements:
    m = Measurements()
    _sample_rss(targets, m.rss, "idle")
    pgids = [t.child.pid for t in targets if t.child is not None]
    busy_before, own_before, wall_before = system_busy_seconds(), own_cpu_seconds(pgids), time.monotonic()

    _log(f"Warming up ({plan.warmup:g} s each at c{plan.connections}) ...")
    warm = _wrk_all(wrk, targets, plan.warmup, plan.connections, plan.high_threads)
    _sample_rss(targets, m.rss, "warm")
    _log(f"Low concurrency ({plan.duration:g} s each) ...")
    m.runs["low"] = _wrk_all(wrk, targets, plan.duration, 1, 1)
    _log(f"High concurrency ({plan.duration:g} s each) ...")
    m.runs["high"] = _wrk_all(wrk, targets, plan.duration, plan.connections, plan.high_threads)

    _log(f"Streaming TTFB ({plan.ttfb_count} sequential requests each) ...")
    for t in targets:
        count, warmup = plan.ttfb_count, plan.ttfb_warmup
        m.samples[t.name] = measure_ttfb(t.port, t.stream_path, STREAM_BODY, t.key, count, warmup)
    _sample_rss(targets, m.rss, "loaded")

    # CPU the whole machine used minus what the benchmark's own processes used.
    others = system_busy_seconds() - busy_before - (own_cpu_seconds(pgids) - own_before)
    m.other_load_cores = max(0.0, others / (time.monotonic() - wall_before))
    wrk_counted = warm["unigate"].requests + sum(r["unigate"].requests for r in m.runs.values())
    m.gateway_answered = 1 + wrk_counted + plan.ttfb_count + plan.ttfb_warmup  # 1: check_reply
    return m


def bench(args: argparse.Namespace, children: Children, tmp: Path) -> int:
    wrk = ensure_binary("wrk", ("wrk",))
    if wrk is None:
        raise BenchError("wrk is not installed (Debian: apt-get install wrk); run as root to install it")
    plan = Plan(
        duration=args.duration,
        warmup=1.0 if args.quick else 2.0,
        connections=args.connections,
        high_threads=min(2, os.cpu_count() or 1),
        ttfb_count=100 if args.quick else 200,
        ttfb_warmup=10 if args.quick else 20,
    )
    upstream, targets = _start_servers(children, tmp)
    m = _measure(wrk, targets, plan)
    meta = {
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git": _git_revision(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "upstream": f"{upstream.kind} {upstream.version}",
        "wrk": tool_version([wrk, "-v"]).split(" [")[0],
        "duration_s": plan.duration,
        "warmup_s": plan.warmup,
        "connections": plan.connections,
        "chat_path": targets[0].chat_path,
        "ttfb_requests": plan.ttfb_count,
        "unigate_workers": 1,
        "other_load_cores": round(m.other_load_cores, 2),
        # wrk does not count the requests in flight when a run ends, so recorded >= answered.
        "usage_answered": m.gateway_answered,
        "usage_recorded": recorded_requests(targets[2]),
    }
    summary, results = summarize(meta, m.runs, m.samples, m.rss)
    print_report(summary, results)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    _log(f"Results written to {RESULTS.relative_to(BENCH_DIR.parent)}")
    return 0 if summary["verdict"] == "PASS" else 1


def _terminate(signum: int, _frame: object) -> NoReturn:
    raise SystemExit(128 + signum)


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, _terminate)
    _log(
        f"unigate benchmark ({os.cpu_count()} CPUs, {platform.python_implementation()} "
        f"{platform.python_version()}, git {_git_revision()})"
    )
    started = time.monotonic()
    children = Children()
    tmp = Path(tempfile.mkdtemp(prefix="unigate-bench-"))
    try:
        return bench(args, children, tmp)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):  # let the clean-up finish
            signal.signal(sig, signal.SIG_IGN)
        children.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
        _log(f"Done in {time.monotonic() - started:.0f} s; all benchmark processes stopped.")


if __name__ == "__main__":
    sys.exit(main())
