"""The music task benchmark's results (`tasks.py`): the runs, the durability count, the
printed table, the verdict against the performance targets (docs/architecture.md) and the JSON summary."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from cli import log
from report import Check
from spy import Profile
from wrk import WrkResult

# performance targets
MIN_SUBMITS_PER_S = 1000.0
MIN_FETCHES_PER_S = 5000.0


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
    log("")
    log(
        f"Music tasks on SQLite ({meta['journal_mode']}, synchronous=NORMAL), {meta['workers']} worker(s), "
        f"{meta['cpus']} CPUs, other load {meta['other_load_cores']:.2f} cores"
    )
    header = (
        f"{'run':<12} {'conns':>5} {'req/s':>9} {'items/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'max ms':>8} {'non-2xx':>7} {'other err':>9} {'CPU us/req':>10} {'cores':>5} {'machine':>7}"
    )
    log(header)
    log("-" * len(header))
    for run in res.runs.values():
        r = run.result
        status = r.errors.get("status", 0)
        log(
            f"{run.name:<12} {r.connections:>5} {r.rps:>9,.0f} {r.rps * run.items_per_request:>9,.0f} "
            f"{r.p50_us / 1000:>8.2f} {r.p99_us / 1000:>8.2f} {r.max_us / 1000:>8.1f} {status:>7} "
            f"{r.failed - status:>9} {r.server_cpu_us:>10.0f} {run.server_cores:>5.2f} "
            f"{run.machine_cores:>7.2f}"
        )
    log("")
    rss = ", ".join(f"{phase} {max(pids.values(), default=0):.1f}" for phase, pids in res.rss_mb.items())
    log(f"Worker RSS (MB, largest worker): {rss}")
    dur = res.durability
    log(
        f"Durability: measured submit run: {dur.ok} 200s, {dur.rows} rows committed "
        f"(allowed extra {dur.in_flight_bound}); whole run: {dur.total_ok} 200s, {dur.total_rows} rows"
    )
    if res.polled:
        log(f"Note: the poller touched {res.polled} tasks during the run (its work is in the numbers).")
    log("")
    log("Verdict (the performance targets in docs/architecture.md):")
    for check in verdict:
        log(check.line())
    log(f"  => {'PASS' if all(c.ok for c in verdict) else 'FAIL'}")


def summarize(res: Results, verdict: list[Check], meta: dict[str, Any]) -> dict[str, Any]:
    """The JSON summary (`bench/results/tasks-latest.json`)."""
    return {
        "meta": meta,
        "runs": {name: run.to_json() for name, run in res.runs.items()},
        "durability": res.durability.to_json(),
        "rss_mb": res.rss_mb,
        "checks": [dataclasses.asdict(c) | {"ok": c.ok} for c in verdict],
        "verdict": "PASS" if all(c.ok for c in verdict) else "FAIL",
    }
