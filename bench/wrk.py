"""Drive a server with wrk and a Lua script (`post.lua`, `tasks.lua`), and parse the line their
shared `done()` (`done.lua`) prints."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
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

    def with_server_cpu(self, cpu_s: float) -> WrkResult:
        """This result with the server's CPU time per request, from `cpu_s` for the whole run."""
        return replace(self, server_cpu_us=cpu_s / max(self.requests, 1) * 1e6)


def run_script(
    wrk: str,
    script: Path,
    url: str,
    duration: float,
    connections: int,
    threads: int,
    env: Mapping[str, str],
    timeout: str = "5s",
    what: str = "",
) -> tuple[WrkResult, list[str]]:
    """Run wrk with a Lua script whose `done()` is `done.lua`'s, with `env` added to the
    environment; the result and wrk's output lines. `what` names the run in errors."""
    threads = max(1, min(threads, connections))
    cmd = [
        wrk,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        timeout,
        "-s",
        str(script),
        url,
    ]
    out = subprocess.run(
        cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=duration + 60, check=False
    )
    lines = out.stdout.splitlines()
    line = next((ln for ln in lines if ln.startswith("BENCH ")), None)
    if out.returncode != 0 or line is None:
        raise BenchError(f"wrk failed ({out.returncode}) {what or 'on ' + url}:\n{out.stdout}\n{out.stderr}")
    return parse_result(line, threads, connections), lines


def parse_result(line: str, threads: int, connections: int) -> WrkResult:
    """The `BENCH key=value ...` line `done.lua` prints."""
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


def run_wrk(
    wrk: str,
    url: str,
    body: bytes,
    key: str,
    duration: float,
    connections: int,
    threads: int,
) -> WrkResult:
    """POST `body` to `url` with `post.lua`."""
    env = {"BENCH_BODY": body.decode(), "BENCH_KEY": key}
    result, _ = run_script(wrk, LUA_SCRIPT, url, duration, connections, threads, env)
    return result
