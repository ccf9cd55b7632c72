"""What storing a Responses API call costs under load: `POST /v1/responses` with `store: true`
against the same call with `store: false`, at 64 connections, on local SQLite.

    bash bench/python.sh responses_store.py [--duration 3] [--connections 64] [--rounds 3] [--workers 2]

unigate runs as operated (`--workers` 2, a key with rpm, tpm and a budget, usage accounting,
metrics, the request log and access lines on) in front of the benchmark's fixed-bytes chat
upstream; the Responses calls are translated to chat, so each stored response gets the
gateway's own id (the fixed upstream would repeat one). The two bodies alternate in each of
`--rounds` rounds, so the machine's other load falls on both; the figures are the medians of
the rounds. Target (docs/architecture.md): a stored call adds at most 0.5 ms at p50.
Exit status: 0 if met, 1 if not, 2 when it could not run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import orjson
from cli import log, run_main
from procs import BenchError, Children, cpu_seconds, request, worker_pids
from targets import CHAT_MODEL, create_key, launch_unigate, unigate_config
from upstream import ensure_binary, start_upstream
from wrk import WrkResult, run_wrk

TARGET_ADDED_US = 500.0
PATH = "/v1/responses"


def _body(store: bool) -> bytes:
    return orjson.dumps({"model": CHAT_MODEL, "input": "hello", "store": store})


def bench(args: argparse.Namespace, children: Children, tmp: Path) -> int:
    wrk = ensure_binary("wrk", ("wrk",))
    if wrk is None:
        raise BenchError("wrk is not installed (Debian: apt-get install wrk)")
    upstream = start_upstream(children, tmp)
    gateway = launch_unigate(children, tmp, unigate_config(upstream.port), workers=args.workers)
    key = create_key(gateway, rpm=1_000_000, tpm=1_000_000_000, budget=1e9)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    for store in (False, True):
        status, data, _ = request(gateway.port, "POST", PATH, _body(store), headers)
        if status != 200:
            raise BenchError(f"POST {PATH} (store: {store}) gave HTTP {status}: {data[:300]!r}")
    stored_id = orjson.loads(data)["id"]
    auth = {"Authorization": f"Bearer {key}"}
    status, _, _ = request(gateway.port, "GET", f"{PATH}/{stored_id}", headers=auth)
    if status != 200:
        raise BenchError(f"GET {PATH}/{{id}} of a stored response gave HTTP {status}")
    pids = worker_pids(gateway.child.pid)
    url = f"http://127.0.0.1:{gateway.port}{PATH}"
    log(f"  upstream {upstream.kind} on :{upstream.port}, unigate ({args.workers} workers) :{gateway.port}")
    runs: dict[str, list[WrkResult]] = {"unstored": [], "stored": []}
    for n in range(args.rounds + 1):
        what = "warm-up" if n == 0 else f"round {n} of {args.rounds}"
        log(f"{what} ({args.duration:g} s each at c{args.connections}) ...")
        for name in runs:
            before = cpu_seconds(pids)
            r = run_wrk(wrk, url, _body(name == "stored"), key, args.duration, args.connections, 2)
            r = r.with_server_cpu(cpu_seconds(pids) - before)
            if r.failed:
                raise BenchError(f"{name}: {r.failed} failed requests under load ({r.errors})")
            log(
                f"  {name:<9} {r.rps:>8,.0f} req/s  p50 {r.p50_us / 1000:.3f} ms  "
                f"p99 {r.p99_us / 1000:.3f} ms  server CPU {r.server_cpu_us:.0f} us/req"
            )
            if n:
                runs[name].append(r)
    med = {name: {f: statistics.median(getattr(r, f) for r in rs) for f in ("rps", "p50_us", "p99_us",
           "server_cpu_us")} for name, rs in runs.items()}  # fmt: skip
    log(f"\n{'medians':<9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/req':>11}")
    for name, m in med.items():
        p50, p99 = m["p50_us"] / 1000, m["p99_us"] / 1000
        log(f"{name:<9} {m['rps']:>8,.0f} {p50:>8.3f} {p99:>8.3f} {m['server_cpu_us']:>11.0f}")
    added = med["stored"]["p50_us"] - med["unstored"]["p50_us"]
    cpu = med["stored"]["server_cpu_us"] - med["unstored"]["server_cpu_us"]
    verdict = "PASS" if added <= TARGET_ADDED_US else "FAIL"
    log(f"storing adds {added / 1000:+.3f} ms at p50 and {cpu:+.0f} us of CPU per call "
        f"(target <= {TARGET_ADDED_US / 1000:g} ms: {verdict})")  # fmt: skip
    return 0 if verdict == "PASS" else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per wrk run (default 3)")
    parser.add_argument("--connections", type=int, default=64, help="connections (default 64)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="unigate workers (default 2)")
    args = parser.parse_args()
    if args.duration < 1 or args.connections < 1 or args.rounds < 1 or args.workers < 1:
        parser.error("--duration, --connections, --rounds and --workers must be at least 1")
    return run_main("Responses store cost", "unigate-responses-store-", args, bench)


if __name__ == "__main__":
    sys.exit(main())
