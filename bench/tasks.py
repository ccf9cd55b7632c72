"""unigate music task benchmark: submit and fetch throughput on durable SQLite (DESIGN §8).

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
against DESIGN §8 (submit >= 1,000/s, fetch >= 5,000/s), no errors, durability and WAL; the
summary goes to `bench/results/tasks-latest.json`. `--profile` (py-spy on PATH or in the
venv) also samples the first worker during each measured run without pausing it (GIL
holders only), prints its top functions and keeps the raw stacks in
`bench/results/tasks-profile-<run>.txt`. Traffic stays on 127.0.0.1; every process started is
stopped and the temporary directory removed. Exit status: 0 when the targets are met, 1 when
one is missed, 2 when the benchmark could not run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import orjson
import yaml
from procs import (
    BenchError,
    Child,
    Children,
    cpu_seconds,
    free_port,
    own_cpu_seconds,
    request,
    rss_kb,
    system_busy_seconds,
    wait_ready,
    which,
    worker_pids,
)
from report import Check
from spy import Profile, Recording, find_py_spy
from wrk import WrkResult

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results" / "tasks-latest.json"
LUA_SCRIPT = BENCH_DIR / "tasks.lua"
UNIGATE_BIN = Path(sys.executable).parent / "unigate"

MODEL = "chirp-v4"
SUBMIT_PATH = "/suno/submit/music"
SUBMIT_BODY = orjson.dumps(
    {"prompt": "[Verse]\nbench song", "mv": MODEL, "title": "Bench", "tags": "pop"}
).decode()
FETCH_IDS = 1000
BATCH_SIZE = 10

# DESIGN §8
MIN_SUBMITS_PER_S = 1000.0
MIN_FETCHES_PER_S = 5000.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark unigate's music submit and fetch on SQLite.")
    parser.add_argument("--duration", type=float, default=8.0, help="Seconds per measured run (default 8).")
    parser.add_argument("--quick", action="store_true", help="3 s runs, 1 s warm-ups.")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections (default 64).")
    parser.add_argument("--workers", type=int, default=1, help="unigate worker processes (default 1).")
    parser.add_argument(
        "--profile", action="store_true", help="Sample the first worker with py-spy during each measured run."
    )
    args = parser.parse_args()
    if args.quick:
        args.duration = 3.0
    if args.duration < 1 or args.connections < 1 or args.workers < 1:
        parser.error("--duration must be >= 1, --connections and --workers >= 1")
    return args


def _log(message: str) -> None:
    print(message, flush=True)


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
    if not UNIGATE_BIN.exists():
        raise BenchError(f"{UNIGATE_BIN} not found: install unigate in this venv (pip install -e .)")
    data_dir = tmp / "data"
    data_dir.mkdir()
    config = tmp / "unigate.yaml"
    config.write_text(yaml.safe_dump(gateway_config(poll_interval), sort_keys=False), encoding="utf-8")
    admin_key = "adm-" + secrets.token_urlsafe(24)
    env = {
        **os.environ,
        "UNIGATE_DATA_DIR": str(data_dir),
        "UNIGATE_CONFIG": str(config),
        "UNIGATE_ADMIN_KEY": admin_key,
    }
    for name in ("UNIGATE_DATABASE_URL", "UNIGATE_REDIS_URL"):  # the default: local SQLite
        env.pop(name, None)
    port = free_port()
    cmd = [str(UNIGATE_BIN), "serve", "--port", str(port), "--workers", str(workers)]
    child = children.start("unigate", cmd, tmp / "unigate.out", env=env)
    wait_ready(child, port, "/readyz", timeout=60)
    key = _create_key(port, admin_key)
    db = data_dir / "unigate.db"
    if not db.exists():
        raise BenchError(f"unigate is up but {db} does not exist: is it on SQLite?")
    return Gateway(child, port, key, db, workers)


def _create_key(port: int, admin_key: str) -> str:
    headers = {"Authorization": f"Bearer {admin_key}", "Content-Type": "application/json"}
    status, data, _ = request(port, "POST", "/admin/keys", orjson.dumps({"name": "bench"}), headers)
    if status not in (200, 201):
        raise BenchError(f"POST /admin/keys gave HTTP {status}: {data[:300]!r}")
    key = orjson.loads(data).get("key")
    if not isinstance(key, str):
        raise BenchError(f"POST /admin/keys answered without a key: {data[:300]!r}")
    return key


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


# --- the database file (read-only, from outside the gateway) ---------------------------


def _db_query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def task_rows(db: Path) -> int:
    return int(_db_query(db, "SELECT count(*) FROM tasks")[0][0])


def settled_task_rows(db: Path, quiet: float = 0.3, limit: float = 5.0) -> int:
    """The row count once it stops moving (submits in flight when wrk stopped may still commit)."""
    deadline = time.monotonic() + limit
    last = task_rows(db)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = task_rows(db)
        if now == last:
            return now
        last = now
    return last


def task_ids(db: Path, count: int) -> list[str]:
    return [str(r[0]) for r in _db_query(db, f"SELECT id FROM tasks ORDER BY random() LIMIT {int(count)}")]


def polled_tasks(db: Path) -> int:
    """Tasks the poller has touched (leased, polled or moved on): 0 if it stayed idle."""
    sql = "SELECT count(*) FROM tasks WHERE poll_attempts > 0 OR version > 0 OR lease_owner IS NOT NULL"
    return int(_db_query(db, sql)[0][0])


def journal_mode(db: Path) -> str:
    return str(_db_query(db, "PRAGMA journal_mode")[0][0]).lower()


# --- wrk -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    name: str
    result: WrkResult
    server_cpu_s: float
    first_error: str = ""
    items_per_request: int = 1
    profile: Profile | None = None
    client_cores: float = 0.0  # wrk
    machine_cores: float = 0.0  # every process on the machine, the benchmark's included

    @property
    def ok(self) -> int:
        """Responses wrk counted with a 2xx status."""
        return self.result.requests - self.result.errors.get("status", 0)

    @property
    def server_cores(self) -> float:
        return self.server_cpu_s / self.result.duration_s if self.result.duration_s else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            **self.result.to_json(),
            "ok": self.ok,
            "items_per_s": self.result.rps * self.items_per_request,
            "items_per_request": self.items_per_request,
            "server_cpu_s": self.server_cpu_s,
            "server_cores": self.server_cores,
            "client_cores": self.client_cores,
            "machine_cores": self.machine_cores,
            "first_error": self.first_error,
            "profile_gil_share": self.profile.gil_share if self.profile else None,
        }


def run_wrk(
    wrk: str, gw: Gateway, mode: str, duration: float, connections: int, env_extra: dict[str, str]
) -> tuple[WrkResult, str]:
    threads = max(1, min(2, connections))
    cmd = [
        wrk,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA_SCRIPT),
        f"http://127.0.0.1:{gw.port}",
    ]
    env = {**os.environ, "BENCH_MODE": mode, "BENCH_KEY": gw.key, **env_extra}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=duration + 60, check=False)
    lines = out.stdout.splitlines()
    line = next((ln for ln in lines if ln.startswith("BENCH ")), None)
    if out.returncode != 0 or line is None:
        raise BenchError(f"wrk failed ({out.returncode}) in {mode} mode:\n{out.stdout}\n{out.stderr}")
    first_error = next((ln.removeprefix("BENCH_ERR ") for ln in lines if ln.startswith("BENCH_ERR ")), "")
    fields = {k: float(v) for k, v in (item.split("=", 1) for item in line.split()[1:])}
    duration_s = fields["duration_us"] / 1e6
    result = WrkResult(
        threads=threads,
        connections=connections,
        requests=int(fields["requests"]),
        duration_s=duration_s,
        rps=fields["requests"] / duration_s if duration_s else 0.0,
        mean_us=fields["mean_us"],
        p50_us=fields["p50_us"],
        p90_us=fields["p90_us"],
        p99_us=fields["p99_us"],
        p999_us=fields["p999_us"],
        max_us=fields["max_us"],
        errors={k.removeprefix("err_"): int(v) for k, v in fields.items() if k.startswith("err_")},
    )
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
    before, busy_before, wrk_before = cpu_seconds(pids), system_busy_seconds(), _reaped()
    started = time.monotonic()
    result, first_error = run_wrk(wrk, gw, mode, duration, connections, env_extra)
    used = cpu_seconds(pids) - before
    wall = time.monotonic() - started
    client_cores = (_reaped() - wrk_before) / wall
    machine_cores = (system_busy_seconds() - busy_before) / wall
    profile = recording.finish() if recording else None
    result = dataclasses.replace(result, server_cpu_us=used / max(result.requests, 1) * 1e6)
    if result.failed and not first_error:
        first_error = _probe_error(gw, mode, env_extra)
    run = Run(name, result, used, first_error, items_per_request, profile, client_cores, machine_cores)
    r = run.result
    _log(
        f"  {name:<12} c{r.connections}: {r.rps:>8,.0f} req/s  p50 {r.p50_us / 1000:.2f} ms  "
        f"p99 {r.p99_us / 1000:.2f} ms  errors {r.failed}  server CPU {r.server_cpu_us:.0f} us/req "
        f"({run.server_cores:.2f} cores; wrk {client_cores:.2f}; machine {machine_cores:.2f} busy)"
    )
    if first_error:
        _log(f"    first error: {first_error}")
    if profile:
        for line in profile.summary():
            _log(line)
    return run


def _reaped() -> float:
    """CPU time of this process's reaped children: the wrk runs."""
    times = os.times()
    return times.children_user + times.children_system


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


@dataclass
class Durability:
    rows_before: int = 0
    rows_after: int = 0
    ok: int = 0
    in_flight_bound: int = 0  # requests wrk may have left unanswered at cut-off
    total_rows: int = 0
    total_ok: int = 0  # every 200 the benchmark saw (smoke test, warm-up, measured run)

    @property
    def rows(self) -> int:
        return self.rows_after - self.rows_before

    @property
    def missing(self) -> int:
        """Submits answered 200 without a row in the database file: must be 0."""
        return max(0, self.ok - self.rows)

    @property
    def unexplained(self) -> int:
        """Rows beyond the 200s and the requests in flight at cut-off: must be 0."""
        return max(0, self.rows - self.ok - self.in_flight_bound)

    def to_json(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "rows": self.rows,
            "missing": self.missing,
            "unexplained": self.unexplained,
        }


@dataclass
class Results:
    runs: dict[str, Run] = field(default_factory=dict)
    durability: Durability = field(default_factory=Durability)
    rss_mb: dict[str, dict[str, float]] = field(default_factory=dict)
    other_load_cores: float = 0.0
    journal_mode: str = ""
    polled: int = 0  # tasks the poller touched during the run (expected 0)


def _sample_rss(gw: Gateway, res: Results, phase: str) -> None:
    sizes = {pid: rss_kb(pid) for pid in gw.pids()}
    res.rss_mb[phase] = {str(pid): round(kb / 1024, 1) for pid, kb in sizes.items() if kb is not None}


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
    pgids = [gw.child.pid]
    busy_before, own_before, wall_before = system_busy_seconds(), own_cpu_seconds(pgids), time.monotonic()
    dur = res.durability
    total_ok = 1  # the smoke test's submit

    _log(f"Submit: warm-up {warmup:g} s, then {duration:g} s at c{connections} ...")
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
    _log(
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
    _log(f"Fetch: {len(ids)} task ids, warm-up {warmup:g} s, then {duration:g} s at c{connections} ...")
    measure(wrk, gw, "fetch warm", "fetch", warmup, connections, fetch_env)
    res.runs["fetch"] = measure(wrk, gw, "fetch", "fetch", duration, connections, fetch_env, py_spy=py_spy)
    _log(f"Batch fetch ({BATCH_SIZE} ids a request): {duration:g} s at c{connections} ...")
    res.runs["batch"] = measure(
        wrk, gw, "batch fetch", "batch", duration, connections, fetch_env, BATCH_SIZE, py_spy=py_spy
    )
    _sample_rss(gw, res, "after fetch")

    # CPU the whole machine used minus what the benchmark's own processes (wrk, unigate) used.
    others = system_busy_seconds() - busy_before - (own_cpu_seconds(pgids) - own_before)
    res.other_load_cores = max(0.0, others / (time.monotonic() - wall_before))
    res.polled = polled_tasks(gw.db)
    return res


def checks(res: Results) -> list[Check]:
    submit, fetch, batch = res.runs["submit"], res.runs["fetch"], res.runs["batch"]
    dur = res.durability
    return [
        Check("music submit throughput", submit.result.rps, MIN_SUBMITS_PER_S, " /s", higher_is_better=True),
        Check("task fetch throughput", fetch.result.rps, MIN_FETCHES_PER_S, " /s", higher_is_better=True),
        Check("submit errors", submit.result.failed, 0, ""),
        Check("fetch errors", fetch.result.failed, 0, ""),
        Check("batch fetch errors", batch.result.failed, 0, ""),
        Check("submits answered 200 without a row", dur.missing, 0, ""),
        Check("rows beyond 200s + in-flight", dur.unexplained, 0, ""),
        Check("SQLite journal mode is WAL (1 = yes)", float(res.journal_mode == "wal"), 1, "", True),
    ]


def print_report(res: Results, verdict: list[Check], meta: dict[str, Any]) -> None:
    _log("")
    _log(
        f"Music tasks on SQLite ({meta['journal_mode']}, synchronous=NORMAL), {meta['workers']} worker(s), "
        f"{meta['cpus']} CPUs, other load {meta['other_load_cores']:.2f} cores"
    )
    header = (
        f"{'run':<12} {'conns':>5} {'req/s':>9} {'items/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'max ms':>8} {'non-2xx':>7} {'other err':>9} {'CPU us/req':>10} {'cores':>5} {'machine':>7}"
    )
    _log(header)
    _log("-" * len(header))
    for run in res.runs.values():
        r = run.result
        status = r.errors.get("status", 0)
        _log(
            f"{run.name:<12} {r.connections:>5} {r.rps:>9,.0f} {r.rps * run.items_per_request:>9,.0f} "
            f"{r.p50_us / 1000:>8.2f} {r.p99_us / 1000:>8.2f} {r.max_us / 1000:>8.1f} {status:>7} "
            f"{r.failed - status:>9} {r.server_cpu_us:>10.0f} {run.server_cores:>5.2f} "
            f"{run.machine_cores:>7.2f}"
        )
    _log("")
    rss = ", ".join(f"{phase} {max(pids.values(), default=0):.1f}" for phase, pids in res.rss_mb.items())
    _log(f"Worker RSS (MB, largest worker): {rss}")
    dur = res.durability
    _log(
        f"Durability: measured submit run: {dur.ok} 200s, {dur.rows} rows committed "
        f"(allowed extra {dur.in_flight_bound}); whole run: {dur.total_ok} 200s, {dur.total_rows} rows"
    )
    if res.polled:
        _log(f"Note: the poller touched {res.polled} tasks during the run (its work is in the numbers).")
    _log("")
    _log("Verdict (DESIGN §8):")
    for check in verdict:
        _log(check.line())
    _log(f"  => {'PASS' if all(c.ok for c in verdict) else 'FAIL'}")


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


def bench(args: argparse.Namespace, children: Children, tmp: Path) -> int:
    wrk = which("wrk")
    if wrk is None:
        raise BenchError("wrk is not installed (Debian: apt-get install wrk)")
    warmup = 1.0 if args.quick else 2.0
    py_spy = find_py_spy() if args.profile else None
    RESULTS.parent.mkdir(exist_ok=True)
    _log(f"Starting unigate ({args.workers} worker(s), SQLite in a fresh data directory) ...")
    poll_interval = first_poll_after(args.duration, warmup)
    gw = start_gateway(children, tmp, args.workers, poll_interval)
    smoke(gw)
    _log(f"  unigate on :{gw.port}, workers {gw.pids()}, database {gw.db}")
    res = run_phases(wrk, gw, tmp, args.duration, warmup, args.connections, py_spy)
    meta = {
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git": _git_revision(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
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
    passed = all(c.ok for c in verdict)
    print_report(res, verdict, meta)
    summary = {
        "meta": meta,
        "runs": {name: run.to_json() for name, run in res.runs.items()},
        "durability": res.durability.to_json(),
        "rss_mb": res.rss_mb,
        "checks": [dataclasses.asdict(c) | {"ok": c.ok} for c in verdict],
        "verdict": "PASS" if passed else "FAIL",
    }
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    _log(f"Results written to {RESULTS.relative_to(BENCH_DIR.parent)}")
    if not gw.child.alive():
        raise BenchError(f"unigate exited during the run:\n{gw.child.log_tail()}")
    return 0 if passed else 1


def _terminate(signum: int, _frame: object) -> NoReturn:
    raise SystemExit(128 + signum)


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, _terminate)
    _log(
        f"unigate music task benchmark ({os.cpu_count()} CPUs, {platform.python_implementation()} "
        f"{platform.python_version()}, git {_git_revision()})"
    )
    started = time.monotonic()
    children = Children()
    tmp = Path(tempfile.mkdtemp(prefix="unigate-tasks-bench-"))
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
