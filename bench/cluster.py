"""Throughput of 1 replica against 3 replicas behind nginx, with global limits on, and of 1
against 2 workers per replica.

    bash bench/python.sh cluster.py [--duration S] [--quick] [--connections N] [--rounds N]

Real `unigate serve` processes on PostgreSQL and Redis, started by the scale-out test harness
(tests/support/cluster.py, whose nginx includes deploy/nginx/unigate-proxy.conf), and `wrk`
(post.lua, as bench/run.sh) POSTing the sandbox chat with a key that has requests-per-minute,
tokens-per-minute and budget limits, enforced in Redis across every worker and replica. No
upstream: the sandbox answers in process, so the figure is the gateway's own capacity.

- Workers per core: one cluster with a 1-worker and a 2-worker replica, each driven directly.
- Scale-out: one cluster of 3 replicas x 2 workers and two nginx in front of it, one balancing
  over replica 0 alone, one over all 3: the same processes, only the balancing differs.
Each comparison alternates its two sides `--rounds` times (the figure is the mean), so a
machine shared with other work drifts under both sides alike; the CPU other processes used
during each run is printed beside it.

On one machine the 3 replicas share its cores with nginx, wrk, PostgreSQL and Redis, so the
ratio says what replicas cost and whether the shared limits hold them back (a limiter that
serialised replicas would show as a ratio well below 1), not what 3 machines would give.
Results go to bench/results/cluster.json.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli import base_meta, bench_parser, log, parse_bench_args, run_main, write_results
from procs import BenchError, Children, OtherLoad, cpu_seconds, request, which
from wrk import WrkResult, run_wrk

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test harness: tests.support
from tests.support.cluster import GatewayCluster, Nginx, gateway_cluster

BODY = b'{"model":"sandbox-chat","messages":[{"role":"user","content":"hello"}]}'
RESULTS = Path(__file__).resolve().parent / "results" / "cluster.json"
# High enough never to refuse during a run, so every request pays the limiter's round trip.
LIMITS = {"rpm": 1_000_000, "tpm": 1_000_000_000, "budget": 1e9}  # as bench/run.sh


@dataclass
class Run:
    side: str
    result: WrkResult
    gateway_cpu_s: float
    other_cores: float

    def row(self) -> dict[str, Any]:
        r = self.result
        return {
            "side": self.side,
            "rps": round(r.rps, 1),
            "p50_ms": round(r.p50_us / 1000, 2),
            "p99_ms": round(r.p99_us / 1000, 2),
            "errors": r.failed,
            "gateway_cpu_us_per_request": round(self.gateway_cpu_s / max(r.requests, 1) * 1e6, 1),
            "other_load_cores": round(self.other_cores, 2),
        }


def _check_limited(port: int, key: str) -> None:
    """One call before the load: answered, with the rate-limit headers of a limited key."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    status, data, reply = request(port, "POST", "/v1/chat/completions", BODY, headers)
    if status != 200 or "x-ratelimit-remaining-requests" not in reply:
        raise BenchError(f"sandbox chat gave HTTP {status} without limit headers: {data[:200]!r}")


def _compare(
    wrk: str, cluster: GatewayCluster, key: str, sides: dict[str, str], args: Any
) -> dict[str, list[Run]]:
    """Drive each side (name -> base URL) in turn, `args.rounds` times; every run's figures."""
    threads = min(2, os.cpu_count() or 1)
    pids = [pid for i in range(len(cluster.replicas)) for pid in cluster.pids(i)]
    runs: dict[str, list[Run]] = {name: [] for name in sides}
    for base in sides.values():
        _check_limited(int(base.rsplit(":", 1)[1]), key)
    for _ in range(args.rounds):
        for name, base in sides.items():
            url = base + "/v1/chat/completions"
            run_wrk(wrk, url, BODY, key, 1.0 if args.quick else 2.0, args.connections, threads)  # warm-up
            other = OtherLoad([os.getpgrp()])
            before = cpu_seconds(pids)
            result = run_wrk(wrk, url, BODY, key, args.duration, args.connections, threads)
            run = Run(name, result, cpu_seconds(pids) - before, other.cores())
            runs[name].append(run)
            log(
                f"  {name:<28} {result.rps:>7.0f} req/s  p50 {result.p50_us / 1000:6.2f} ms  "
                f"p99 {result.p99_us / 1000:7.2f} ms  errors {result.failed}  "
                f"(other processes: {run.other_cores:.1f} cores)"
            )
    return runs


def _mean_rps(runs: list[Run]) -> float:
    return sum(r.result.rps for r in runs) / len(runs)


def bench(args: Any, _children: Children, tmp: Path) -> int:
    wrk = which("wrk")
    if wrk is None:
        raise BenchError("wrk is not installed (Debian: apt-get install wrk)")
    log("Workers per core: a 1-worker and a 2-worker replica on PostgreSQL + Redis ...")
    (tmp / "workers").mkdir()
    with gateway_cluster(replicas=2, workers=[1, 2], workdir=tmp / "workers") as cluster:
        key = cluster.create_key(name="bench", **LIMITS)
        per_worker = _compare(
            wrk,
            cluster,
            key,
            {"1 worker, direct": cluster.replica_url(0), "2 workers, direct": cluster.replica_url(1)},
            args,
        )
    log("Scale-out: 3 replicas x 2 workers, nginx over replica 0 alone and over all 3 ...")
    (tmp / "replicas").mkdir()
    with gateway_cluster(replicas=3, workers=2, workdir=tmp / "replicas") as cluster:
        (tmp / "nginx-one").mkdir()
        one = Nginx(tmp / "nginx-one", [f"127.0.0.1:{cluster.replicas[0].port}"])
        one.start()
        try:
            key = cluster.create_key(name="bench", **LIMITS)
            scale = _compare(
                wrk, cluster, key, {"1 replica, nginx": one.url, "3 replicas, nginx": cluster.url}, args
            )
        finally:
            one.stop()
    workers_ratio = _mean_rps(per_worker["2 workers, direct"]) / _mean_rps(per_worker["1 worker, direct"])
    scale_ratio = _mean_rps(scale["3 replicas, nginx"]) / _mean_rps(scale["1 replica, nginx"])
    log(f"2 workers vs 1 on one replica ({os.cpu_count()} CPUs): {workers_ratio:.2f}x")
    log(f"3 replicas vs 1, both behind nginx, one machine ({os.cpu_count()} CPUs): {scale_ratio:.2f}x")
    summary = {
        "meta": {
            **base_meta(),
            "duration_s": args.duration,
            "rounds": args.rounds,
            "connections": args.connections,
            "limits": LIMITS,
        },
        "runs": [r.row() for runs in (*per_worker.values(), *scale.values()) for r in runs],
        "ratio_2_vs_1_workers": round(workers_ratio, 2),
        "ratio_3_vs_1_replicas": round(scale_ratio, 2),
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
    parser.add_argument("--rounds", type=int, default=2, help="alternations of each comparison (default 2)")
    args = parse_bench_args(
        parser, ["connections", "rounds"], "--duration, --connections and --rounds must be at least 1"
    )
    return run_main("unigate cluster benchmark", "unigate-cluster-bench-", args, bench)


if __name__ == "__main__":
    sys.exit(main())
