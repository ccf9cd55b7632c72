"""unigate music task benchmark: submit and fetch throughput on durable SQLite
(the targets are in docs/architecture.md).

    bash bench/tasks.sh [--duration 8] [--quick] [--connections 64] [--workers 1] [--profile]

What is measured
----------------
One `unigate serve` on 127.0.0.1 with its default storage: SQLite in a fresh data directory,
WAL with synchronous=NORMAL (a 200 means the task survives a crash or kill -9 of the gateway;
only an OS crash or power loss may take the last commits). The sandbox is the only provider,
behind one priced music model (`chirp-v4`), so every submit also writes a billing reservation.
Sandbox jobs take an hour and the first poll waits until after the runs (30 s, more for long
runs): nothing renders audio and the poller finds nothing due, so the numbers are the
gateway's cost (plus the sandbox's submit, which writes one small job file per task, as a
real upstream's would cost one HTTP call). How many tasks the poller touched is reported.

- submit: wrk POSTs a music prompt to `/suno/submit/music`: auth, validation, routing, the
  sandbox's submit, the group-committed insert of the task, its two clips and its price
  reservation, then the answer (sent only after the commit). Durability check: the new rows
  of `tasks`, counted in the database file by a separate read-only connection once the
  count settles, must be at least the 200s wrk counted and at most that plus the requests
  in flight when wrk stopped.
- fetch: wrk GETs `/suno/fetch/<id>`, cycling over ~1,000 ids of the tasks submitted above
  (a primary-key read and the full task record rendered).
- batch fetch: wrk POSTs `{"ids": [10 ids]}` to `/suno/fetch` (requests/s and tasks/s; not a
  DESIGN target).

Each run is preceded by a warm-up (submit, fetch). For each: requests/s, p50/p99 latency,
errors (with the first non-2xx body), the server workers' CPU time per request (/proc
utime+stime, so threads included) and the cores they used, wrk's cores and the whole
machine's busy cores (this machine may be shared: "other load" is what the benchmark's own
processes do not explain); worker RSS idle and after each phase. The verdict holds the runs
against the performance targets (submit >= 1,000/s, fetch >= 5,000/s), no errors,
durability and WAL; the summary goes to `bench/results/tasks-latest.json`. `--profile`
(py-spy on PATH or in the venv) also samples the first worker during each measured run without pausing it (GIL
holders only), prints its top functions and keeps the raw stacks in
`bench/results/tasks-profile-<run>.txt`. Traffic stays on 127.0.0.1; every process started is
stopped and the temporary directory removed. Exit status: 0 when the targets are met, 1 when
one is missed, 2 when the benchmark could not run.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from cli import (
    BENCH_DIR,
    RESULTS_DIR,
    base_meta,
    bench_parser,
    log,
    parse_bench_args,
    run_main,
    write_results,
)
from procs import (
    BenchError,
    Child,
    Children,
    OtherLoad,
    cpu_seconds,
    reaped_cpu_seconds,
    request,
    system_busy_seconds,
    which,
    worker_pids,
    workers_rss_kb,
)
from spy import Recording, find_py_spy
from targets import create_key, launch_unigate
from tasks_db import journal_mode, polled_tasks, settled_task_rows, task_ids
from tasks_report import Results, Run, checks, print_report, summarize
from wrk import WrkResult, run_script

RESULTS = RESULTS_DIR / "tasks-latest.json"
LUA_SCRIPT = BENCH_DIR / "tasks.lua"

MODEL = "chirp-v4"
SUBMIT_PATH = "/suno/submit/music"
SUBMIT_BODY = orjson.dumps(
    {"prompt": "[Verse]\nbench song", "mv": MODEL, "title": "Bench", "tags": "pop"}
).decode()
FETCH_IDS = 1000
BATCH_SIZE = 10


def parse_args() -> argparse.Namespace:
    parser = bench_parser(
        "Benchmark unigate's music submit and fetch on SQLite.",
        duration_help="Seconds per measured run (default 8).",
        quick_help="3 s runs, 1 s warm-ups.",
        connections_help="wrk connections (default 64).",
    )
    parser.add_argument("--workers", type=int, default=1, help="unigate worker processes (default 1).")
    parser.add_argument(
        "--profile", action="store_true", help="Sample the first worker with py-spy during each measured run."
    )
    return parse_bench_args(
        parser, ("connections", "workers"), "--duration must be >= 1, --connections and --workers >= 1"
    )


# --- the gateway ----------------------------------------------------------------------


@dataclass(frozen=True)
class Gateway:
    child: Child
    port: int
    key: str
    db: Path
    workers: int

    def pids(self) -> list[int]:
        return worker_pids(self.child.pid)


def gateway_config(poll_interval: float) -> dict[str, Any]:
    return {
        "providers": [{"name": "sandbox", "protocol": "sandbox"}],
        "models": [{"name": MODEL, "routes": [{"provider": "sandbox"}], "price_per_call": 0.01}],
        # An hour per job and a first poll after the run: no audio is rendered and the poller
        # finds nothing due during the run, so the runs measure the gateway.
        "sandbox": {"music_seconds": 3600},
        "tasks": {"poll_interval": poll_interval, "max_poll_interval": max(60, 2 * poll_interval)},
    }


def first_poll_after(duration: float, warmup: float) -> float:
    """30 s, or longer when the runs take longer (3 measured runs, 2 warm-ups, some slack)."""
    return float(max(30, round(3 * duration + 2 * warmup + 10)))


def start_gateway(children: Children, tmp: Path, workers: int, poll_interval: float = 30.0) -> Gateway:
    unigate = launch_unigate(children, tmp, gateway_config(poll_interval), workers, data_dir="data")
    key = create_key(unigate)
    db = unigate.data_dir / "unigate.db"
    if not db.exists():
        raise BenchError(f"unigate is up but {db} does not exist: is it on SQLite?")
    return Gateway(unigate.child, unigate.port, key, db, workers)


def _headers(gw: Gateway, json_body: bool) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {gw.key}"}
    if json_body:
        headers["Content-Type"] = "application/json"
    return headers


def _task_record(status: int, data: bytes, what: str) -> Any:
    if status != 200:
        raise BenchError(f"{what} gave HTTP {status}: {data[:300]!r}")
    body = orjson.loads(data)
    if body.get("code") != "success":
        raise BenchError(f"{what} answered without code=success: {data[:300]!r}")
    return body["data"]


def smoke(gw: Gateway) -> None:
    """One submit, fetch and batch fetch before any load: each answers the task record."""
    status, data, _ = request(gw.port, "POST", SUBMIT_PATH, SUBMIT_BODY.encode(), _headers(gw, True))
    record = _task_record(status, data, f"POST {SUBMIT_PATH}")
    task_id = record.get("task_id")
    if not isinstance(task_id, str) or record.get("status") != "SUBMITTED":
        raise BenchError(f"unexpected submit answer: {data[:300]!r}")
    status, data, _ = request(gw.port, "GET", f"/suno/fetch/{task_id}", headers=_headers(gw, False))
    if _task_record(status, data, "GET /suno/fetch/<id>").get("task_id") != task_id:
        raise BenchError(f"fetch answered another task: {data[:300]!r}")
    body = orjson.dumps({"ids": [task_id]})
    status, data, _ = request(gw.port, "POST", "/suno/fetch", body, _headers(gw, True))
    found = _task_record(status, data, "POST /suno/fetch")
    if not isinstance(found, list) or [t.get("task_id") for t in found] != [task_id]:
        raise BenchError(f"batch fetch answered other tasks: {data[:300]!r}")


# --- wrk -------------------------------------------------------------------------------


def run_wrk(
    wrk: str, gw: Gateway, mode: str, duration: float, connections: int, env_extra: dict[str, str]
) -> tuple[WrkResult, str]:
    """One wrk run of `tasks.lua` in `mode`: the result and the first non-2xx answer seen."""
    env = {"BENCH_MODE": mode, "BENCH_KEY": gw.key, **env_extra}
    url = f"http://127.0.0.1:{gw.port}"
    result, lines = run_script(
        wrk, LUA_SCRIPT, url, duration, connections, 2, env, timeout="10s", what=f"in {mode} mode"
    )
    first_error = next((ln.removeprefix("BENCH_ERR ") for ln in lines if ln.startswith("BENCH_ERR ")), "")
    return result, first_error


def measure(
    wrk: str,
    gw: Gateway,
    name: str,
    mode: str,
    duration: float,
    connections: int,
    env_extra: dict[str, str],
    items_per_request: int = 1,
    py_spy: str | None = None,
) -> Run:
    pids = gw.pids()
    recording = None
    if py_spy:
        out = RESULTS.parent / f"tasks-profile-{name.replace(' ', '-')}.txt"
        out.unlink(missing_ok=True)
        recording = Recording(py_spy, pids[0], duration, out)
    before, busy_before, wrk_before = cpu_seconds(pids), system_busy_seconds(), reaped_cpu_seconds()
    started = time.monotonic()
    result, first_error = run_wrk(wrk, gw, mode, duration, connections, env_extra)
    used = cpu_seconds(pids) - before
    wall = time.monotonic() - started
    client_cores = (reaped_cpu_seconds() - wrk_before) / wall
    machine_cores = (system_busy_seconds() - busy_before) / wall
    profile = recording.finish() if recording else None
    result = result.with_server_cpu(used)
    if result.failed and not first_error:
        first_error = _probe_error(gw, mode, env_extra)
    run = Run(name, result, used, first_error, items_per_request, profile, client_cores, machine_cores)
    r = run.result
    log(
        f"  {name:<12} c{r.connections}: {r.rps:>8,.0f} req/s  p50 {r.p50_us / 1000:.2f} ms  "
        f"p99 {r.p99_us / 1000:.2f} ms  errors {r.failed}  server CPU {r.server_cpu_us:.0f} us/req "
        f"({run.server_cores:.2f} cores; wrk {client_cores:.2f}; machine {machine_cores:.2f} busy)"
    )
    if first_error:
        log(f"    first error: {first_error}")
    if profile:
        for line in profile.summary():
            log(line)
    return run


def _probe_error(gw: Gateway, mode: str, env_extra: dict[str, str]) -> str:
    """wrk saw errors without a non-2xx body (timeouts, resets): try one request by hand."""
    try:
        if mode == "submit":
            status, data, _ = request(gw.port, "POST", SUBMIT_PATH, SUBMIT_BODY.encode(), _headers(gw, True))
        else:
            first_id = Path(env_extra["BENCH_IDS_FILE"]).read_text().split()[0]
            status, data, _ = request(gw.port, "GET", f"/suno/fetch/{first_id}", headers=_headers(gw, False))
    except OSError as exc:
        return f"(one request after the run failed too: {exc})"
    return f"(no non-2xx body during the run; one request after it: HTTP {status} {data[:300]!r})"


# --- the run ---------------------------------------------------------------------------


def _sample_rss(gw: Gateway, res: Results, phase: str) -> None:
    res.rss_mb[phase] = {str(pid): round(kb / 1024, 1) for pid, kb in workers_rss_kb(gw.pids()).items()}


def run_phases(
    wrk: str,
    gw: Gateway,
    tmp: Path,
    duration: float,
    warmup: float,
    connections: int,
    py_spy: str | None = None,
) -> Results:
    res = Results(journal_mode=journal_mode(gw.db))
    _sample_rss(gw, res, "idle")
    other_load = OtherLoad([gw.child.pid])
    dur = res.durability
    total_ok = 1  # the smoke test's submit

    log(f"Submit: warm-up {warmup:g} s, then {duration:g} s at c{connections} ...")
    warm = measure(wrk, gw, "submit warm", "submit", warmup, connections, {"BENCH_BODY": SUBMIT_BODY})
    total_ok += warm.ok
    dur.rows_before = settled_task_rows(gw.db)
    submit_env = {"BENCH_BODY": SUBMIT_BODY}
    run = measure(wrk, gw, "submit", "submit", duration, connections, submit_env, py_spy=py_spy)
    res.runs["submit"] = run
    dur.rows_after = settled_task_rows(gw.db)
    dur.ok = run.ok
    errors = run.result.errors
    dur.in_flight_bound = connections + errors.get("timeout", 0) + errors.get("read", 0)
    dur.total_rows, dur.total_ok = dur.rows_after, total_ok + run.ok
    log(
        f"  durability: {dur.rows} new rows in {gw.db.name} for {dur.ok} 200s counted by wrk "
        f"(allowed extra: up to {dur.in_flight_bound} in flight); {dur.total_rows} rows in all "
        f"for {dur.total_ok} 200s"
    )
    _sample_rss(gw, res, "after submit")

    ids = task_ids(gw.db, FETCH_IDS)
    if len(ids) < BATCH_SIZE:
        raise BenchError(f"only {len(ids)} tasks in the database: cannot run the fetch load")
    ids_file = tmp / "ids.txt"
    ids_file.write_text("\n".join(ids) + "\n", encoding="utf-8")
    fetch_env = {"BENCH_IDS_FILE": str(ids_file), "BENCH_BATCH": str(BATCH_SIZE)}
    log(f"Fetch: {len(ids)} task ids, warm-up {warmup:g} s, then {duration:g} s at c{connections} ...")
    measure(wrk, gw, "fetch warm", "fetch", warmup, connections, fetch_env)
    res.runs["fetch"] = measure(wrk, gw, "fetch", "fetch", duration, connections, fetch_env, py_spy=py_spy)
    log(f"Batch fetch ({BATCH_SIZE} ids a request): {duration:g} s at c{connections} ...")
    res.runs["batch"] = measure(
        wrk, gw, "batch fetch", "batch", duration, connections, fetch_env, BATCH_SIZE, py_spy=py_spy
    )
    _sample_rss(gw, res, "after fetch")

    res.other_load_cores = other_load.cores()
    res.polled = polled_tasks(gw.db)
    return res


def bench(args: argparse.Namespace, children: Children, tmp: Path) -> int:
    wrk = which("wrk")
    if wrk is None:
        raise BenchError("wrk is not installed (Debian: apt-get install wrk)")
    warmup = 1.0 if args.quick else 2.0
    py_spy = find_py_spy() if args.profile else None
    RESULTS.parent.mkdir(exist_ok=True)
    log(f"Starting unigate ({args.workers} worker(s), SQLite in a fresh data directory) ...")
    poll_interval = first_poll_after(args.duration, warmup)
    gw = start_gateway(children, tmp, args.workers, poll_interval)
    smoke(gw)
    log(f"  unigate on :{gw.port}, workers {gw.pids()}, database {gw.db}")
    res = run_phases(wrk, gw, tmp, args.duration, warmup, args.connections, py_spy)
    meta = {
        **base_meta(),
        "wrk_threads": res.runs["submit"].result.threads,
        "connections": args.connections,
        "duration_s": args.duration,
        "warmup_s": warmup,
        "workers": args.workers,
        "database": "sqlite",
        "journal_mode": res.journal_mode,
        "synchronous": "NORMAL",
        "fetch_ids": FETCH_IDS,
        "batch_size": BATCH_SIZE,
        "other_load_cores": round(res.other_load_cores, 2),
        "first_poll_after_s": poll_interval,
        "tasks_polled": res.polled,
        "profiled": bool(py_spy),
    }
    verdict = checks(res)
    print_report(res, verdict, meta)
    write_results(RESULTS, summarize(res, verdict, meta))
    if not gw.child.alive():
        raise BenchError(f"unigate exited during the run:\n{gw.child.log_tail()}")
    return 0 if all(c.ok for c in verdict) else 1


def main() -> int:
    return run_main("unigate music task benchmark", "unigate-tasks-bench-", parse_args(), bench)


if __name__ == "__main__":
    sys.exit(main())
