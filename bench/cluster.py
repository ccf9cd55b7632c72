"""Throughput of 1 replica against 3 replicas behind nginx, with global limits on.

    bash bench/python.sh cluster.py [--duration S] [--quick] [--connections N]

Each layout runs on its own PostgreSQL and Redis with real `unigate serve` processes, started by
the scale-out test harness (tests/support/cluster.py: the same nginx proxy settings as
deploy/nginx/), and `wrk` (post.lua, as bench/run.sh) POSTs the sandbox chat with a key that
has requests-per-minute, tokens-per-minute and budget limits, enforced in Redis across every
worker and replica. No upstream: the sandbox answers in process, so the figure is the gateway's
own capacity. Layouts:

  1 replica x 1 worker, direct       the workers-per-core question (with the next one)
  1 replica x 2 workers, direct
  1 replica x 2 workers, nginx       the baseline of the ratio (the same path as below)
  3 replicas x 2 workers, nginx      on the same machine: same cores, 3x the processes

On one machine the 3 replicas share its cores with nginx, wrk, PostgreSQL and Redis, so the
ratio says what replicas cost and whether the limits hold them back (a shared limiter that
serialised replicas would show as a ratio well below 1), not what 3 machines would give.
Results go to bench/results/cluster.json.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli import base_meta, bench_parser, log, parse_bench_args, run_main, write_results
from procs import BenchError, Children, OtherLoad, cpu_seconds, request, which
from wrk import WrkResult, run_wrk

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test harness: tests.support
from tests.support.cluster import GatewayCluster, gateway_cluster

BODY = b'{"model":"sandbox-chat","messages":[{"role":"user","content":"hello"}]}'
RESULTS = Path(__file__).resolve().parent / "results" / "cluster.json"
# High enough never to refuse during a run, so every request pays the limiter's round trip.
LIMITS = {"rpm": 1_000_000, "tpm": 1_000_000_000, "budget": 1e9}  # as bench/run.sh


@dataclass
class Run:
    layout: str
    replicas: int
    workers: int
    via: str
    result: WrkResult
    gateway_cpu_s: float
    other_cores: float

    def row(self) -> dict[str, Any]:
        r = self.result
        return {
            "layout": self.layout,
            "replicas": self.replicas,
            "workers": self.workers,
            "via": self.via,
            "rps": round(r.rps, 1),
            "p50_ms": round(r.p50_us / 1000, 2),
            "p99_ms": round(r.p99_us / 1000, 2),
            "errors": r.failed,
            "gateway_cpu_us_per_request": round(self.gateway_cpu_s / max(r.requests, 1) * 1e6, 1),
            "other_load_cores": round(self.other_cores, 2),
        }


def _check_limited(cluster: GatewayCluster, key: str) -> None:
    """One call before the load: answered, with the rate-limit headers of a limited key."""
    port = int(cluster.url.rsplit(":", 1)[1])
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    status, data, reply = request(port, "POST", "/v1/chat/completions", BODY, headers)
    if status != 200 or "x-ratelimit-remaining-requests" not in reply:
        raise BenchError(f"sandbox chat gave HTTP {status} without limit headers: {data[:200]!r}")


def _measure(wrk: str, cluster: GatewayCluster, key: str, via: str, args: Any, layout: str) -> Run:
    url = (cluster.url if via == "nginx" else cluster.replica_url(0)) + "/v1/chat/completions"
    threads = min(2, os.cpu_count() or 1)
    run_wrk(wrk, url, BODY, key, 2.0 if not args.quick else 1.0, args.connections, threads)  # warm-up
    pids = [pid for i in range(len(cluster.replicas)) for pid in cluster.pids(i)]
    other = OtherLoad([os.getpgrp()])
    before = cpu_seconds(pids)
    result = run_wrk(wrk, url, BODY, key, args.duration, args.connections, threads)
    run = Run(
        layout,
        len(cluster.replicas),
        cluster.replicas[0].workers,
        via,
        result,
        cpu_seconds(pids) - before,
        other.cores(),
    )
    log(
        f"  {layout:<34} {result.rps:>8.0f} req/s  p50 {result.p50_us / 1000:6.2f} ms  "
        f"p99 {result.p99_us / 1000:7.2f} ms  errors {result.failed}  "
        f"(other processes on the machine: {run.other_cores:.1f} cores)"
    )
    return run


def bench(args: Any, _children: Children, tmp: Path) -> int:
    wrk = which("wrk")
    if wrk is None:
        raise BenchError("wrk is not installed (Debian: apt-get install wrk)")
    runs: list[Run] = []
    layouts = [(1, 1, ["direct"]), (1, 2, ["direct", "nginx"]), (3, 2, ["nginx"])]
    for replicas, workers, vias in layouts:
        log(f"Starting {replicas} replica(s) x {workers} worker(s) on PostgreSQL + Redis behind nginx ...")
        started = time.monotonic()
        workdir = tmp / f"r{replicas}w{workers}"
        workdir.mkdir()
        with gateway_cluster(replicas=replicas, workers=workers, workdir=workdir) as cluster:
            log(f"  up in {time.monotonic() - started:.1f} s")
            key = cluster.create_key(name="bench", **LIMITS)
            _check_limited(cluster, key)
            for via in vias:
                layout = f"{replicas} replica(s) x {workers} worker(s), {via}"
                runs.append(_measure(wrk, cluster, key, via, args, layout))
    by = {(r.replicas, r.workers, r.via): r.result.rps for r in runs}
    scale = by[(3, 2, "nginx")] / by[(1, 2, "nginx")]
    workers = by[(1, 2, "direct")] / by[(1, 1, "direct")]
    log(f"3 replicas vs 1 (both behind nginx, {os.cpu_count()} CPUs): {scale:.2f}x")
    log(f"2 workers vs 1 (one replica, direct): {workers:.2f}x")
    summary = {
        "meta": {
            **base_meta(),
            "duration_s": args.duration,
            "connections": args.connections,
            "limits": LIMITS,
        },
        "runs": [r.row() for r in runs],
        "ratio_3_vs_1_replicas": round(scale, 2),
        "ratio_2_vs_1_workers": round(workers, 2),
    }
    write_results(RESULTS, summary)
    return 0


def main() -> int:
    parser = bench_parser(
        "1 vs 3 unigate replicas behind nginx, limits on (PostgreSQL + Redis)",
        "seconds of load per layout (default 8)",
        "3 s per layout",
        "wrk connections (default 64)",
    )
    args = parse_bench_args(parser, ["connections"], "--duration and --connections must be at least 1")
    return run_main("unigate cluster benchmark", "unigate-cluster-bench-", args, bench)


if __name__ == "__main__":
    sys.exit(main())
