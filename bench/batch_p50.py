"""Interactive latency with and without a batch running on the same key.

    bash bench/python.sh batch_p50.py [--calls 300] [--lines 20000] [--rounds 3] [--rpm 60000]

One `unigate serve` worker on local SQLite with the sandbox (no upstream: what is measured is
the gateway's own time), a key with `rpm` (its batches get `batches.max_share` of it, half by
default). Each round measures `calls` sequential chat calls on one keep-alive connection twice,
alone and while a `lines`-line Anthropic message batch runs on the same key, alternating which
side goes first so a machine shared with other work drifts under both alike; the figures are the
medians of the rounds' p50 and p99, with the gateway's CPU seconds per side.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import time
from pathlib import Path
from typing import Any

import orjson
from cli import log, run_main
from procs import BenchError, Children, cpu_seconds, request, worker_pids
from targets import Unigate, create_key, launch_unigate

CHAT = orjson.dumps(
    {"model": "sandbox-chat", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}
)


def _calls(port: int, key: str, count: int) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    took = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            conn.request("POST", "/v1/chat/completions", body=CHAT, headers=headers)
            resp = conn.getresponse()
            resp.read()
            took.append((time.perf_counter() - started) * 1000)
            if resp.status != 200:
                raise BenchError(f"an interactive call got {resp.status}")
    finally:
        conn.close()
    return took


def _batch(gw: Unigate, key: str, lines: int) -> str:
    params = {"model": "sandbox-chat", "max_tokens": 16, "messages": [{"role": "user", "content": "batched"}]}
    body = orjson.dumps({"requests": [{"custom_id": f"l{i}", "params": params} for i in range(lines)]})
    headers = {"x-api-key": key, "Content-Type": "application/json", "anthropic-version": "2023-06-01"}
    status, data, _ = request(gw.port, "POST", "/v1/messages/batches", body, headers, timeout=120)
    if status != 200:
        raise BenchError(f"batch create: {status} {data[:200]!r}")
    return str(orjson.loads(data)["id"])


def _status(gw: Unigate, key: str, batch_id: str) -> dict[str, Any]:
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    status, data, _ = request(gw.port, "GET", f"/v1/messages/batches/{batch_id}", None, headers)
    if status != 200:
        raise BenchError(f"batch retrieve: {status}")
    found: dict[str, Any] = orjson.loads(data)
    return found


def _cancel(gw: Unigate, key: str, batch_id: str) -> None:
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    request(gw.port, "POST", f"/v1/messages/batches/{batch_id}/cancel", b"", headers)
    while _status(gw, key, batch_id)["processing_status"] != "ended":
        time.sleep(0.1)


def _side(
    gw: Unigate, key: str, args: argparse.Namespace, with_batch: bool
) -> tuple[list[float], float, int]:
    pids = [gw.child.proc.pid, *worker_pids(gw.child.proc.pid)]
    batch_id = _batch(gw, key, args.lines) if with_batch else None
    if batch_id is not None:
        time.sleep(0.5)  # the batch is running at its pace
    cpu = cpu_seconds(pids)
    took = _calls(gw.port, key, args.calls)
    cpu = cpu_seconds(pids) - cpu
    done = 0
    if batch_id is not None:
        state = _status(gw, key, batch_id)
        if state["processing_status"] != "in_progress":
            raise BenchError("the batch ended before the interactive calls: raise --lines")
        done = int(state["request_counts"]["succeeded"])
        _cancel(gw, key, batch_id)
    return took, cpu, done


def bench(args: argparse.Namespace, children: Children, tmp: Path) -> int:
    gw = launch_unigate(children, tmp, {"sandbox": {"enabled": True}})
    key = create_key(gw, rpm=args.rpm)
    _calls(gw.port, key, 50)  # warm-up
    sides: dict[bool, list[tuple[float, float, float, int]]] = {False: [], True: []}
    for n in range(args.rounds):
        for with_batch in (False, True) if n % 2 == 0 else (True, False):
            took, cpu, done = _side(gw, key, args, with_batch)
            q = statistics.quantiles(took, n=100)
            sides[with_batch].append((statistics.median(took), q[98], cpu, done))
            side = "with batch" if with_batch else "alone     "
            extra = f"  batch lines done {done}" if with_batch else ""
            log(f"round {n + 1} {side}: p50 {statistics.median(took):.2f} ms  p99 {q[98]:.2f} ms  "
                f"gateway CPU {cpu:.2f} s{extra}")  # fmt: skip
    for with_batch, runs in sides.items():
        p50 = statistics.median(r[0] for r in runs)
        p99 = statistics.median(r[1] for r in runs)
        name = "with a batch running" if with_batch else "alone"
        log(f"{name:>20}: p50 {p50:.2f} ms, p99 {p99:.2f} ms (median of rounds)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rpm", type=int, default=60_000)
    args = parser.parse_args()
    return run_main("Interactive p50 with and without a batch", "unigate-batch-p50-", args, bench)


if __name__ == "__main__":
    raise SystemExit(main())
