"""Drive one target with wrk and `post.lua`, and parse the line its `done()` prints."""

from __future__ import annotations

import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from procs import BenchError

LUA_SCRIPT = Path(__file__).resolve().parent / "post.lua"


@dataclass(frozen=True)
class WrkResult:
    threads: int
    connections: int
    requests: int
    duration_s: float
    rps: float
    mean_us: float
    p50_us: float
    p90_us: float
    p99_us: float
    p999_us: float
    max_us: float
    errors: dict[str, int]
    # CPU time the server's worker processes spent per request (set by the caller).
    server_cpu_us: float = float("nan")

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "failed": self.failed}


def run_wrk(
    wrk: str,
    url: str,
    body: bytes,
    key: str,
    duration: float,
    connections: int,
    threads: int,
) -> WrkResult:
    threads = max(1, min(threads, connections))
    cmd = [
        wrk,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "5s",
        "-s",
        str(LUA_SCRIPT),
        url,
    ]
    env = {**os.environ, "BENCH_BODY": body.decode(), "BENCH_KEY": key}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=duration + 60, check=False)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("BENCH ")), None)
    if out.returncode != 0 or line is None:
        raise BenchError(f"wrk failed ({out.returncode}) on {url}:\n{out.stdout}\n{out.stderr}")
    fields = {k: float(v) for k, v in (item.split("=", 1) for item in line.split()[1:])}
    duration_s = fields["duration_us"] / 1e6
    return WrkResult(
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
