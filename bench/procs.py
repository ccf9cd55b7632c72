"""Child processes: each in its own process group (so stopping it stops its workers too),
plain HTTP helpers for readiness checks, and resident memory and CPU time from /proc."""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


class BenchError(Exception):
    """The benchmark cannot go on; the message says why."""


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class Children:
    """Starts processes and stops every one of them, newest first."""

    def __init__(self) -> None:
        self._children: list[Child] = []

    def start(self, name: str, cmd: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> Child:
        with log.open("wb") as out:
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                start_new_session=True,
            )
        child = Child(name, proc, log)
        self._children.append(child)
        return child

    def stop_all(self) -> None:
        while self._children:
            stop(self._children.pop())


def stop(child: Child, grace: float = 5.0) -> None:
    """SIGTERM the child's process group, then SIGKILL whatever is left after `grace` s."""
    pgid = child.pid  # start_new_session: the child leads its own group
    _signal_group(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.proc.wait(timeout=grace)
    # The leader may be gone while workers of its group linger: kill the group regardless.
    _signal_group(pgid, signal.SIGKILL)
    child.proc.wait()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def which(binary: str) -> str | None:
    """`shutil.which`, also looking in the sbin directories a non-root PATH may lack."""
    return shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/sbin:/usr/local/sbin")


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 5.0,
) -> tuple[int, bytes, dict[str, str]]:
    """One request on a fresh connection: status, body and (lower-cased) headers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=dict(headers or {}))
        resp = conn.getresponse()
        return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def wait_ready(child: Child, port: int, path: str, timeout: float = 30.0, want: int | None = 200) -> None:
    """Poll `GET path` until it answers (with status `want`, unless None) or time runs out."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if not child.alive():
            raise BenchError(f"{child.name} exited with code {child.proc.returncode}:\n{child.log_tail()}")
        try:
            status, _, _ = request(port, "GET", path, timeout=1.0)
            if want is None or status == want:
                return
            last = f"HTTP {status}"
        except OSError as exc:
            last = str(exc)
        time.sleep(0.1)
    raise BenchError(f"{child.name} not ready after {timeout:.0f} s ({last}):\n{child.log_tail()}")


def rss_kb(pid: int) -> int | None:
    """VmRSS of a process in KiB, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def pss_kb(pid: int) -> int | None:
    """Proportional set size in KiB (each shared page divided among the processes that map
    it), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def workers_rss_kb(pids: Sequence[int]) -> dict[int, int]:
    """VmRSS in KiB of each of these processes that is still there."""
    return {pid: kb for pid in pids if (kb := rss_kb(pid)) is not None}


def _children_of(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            kids.extend(int(p) for p in task.read_text().split())
        except OSError:
            continue
    return kids


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def worker_pids(pid: int) -> list[int]:
    """The processes that serve requests: uvicorn's worker children when it runs several,
    else the process itself (one worker runs in uvicorn's own process)."""
    kids = [k for k in _children_of(pid) if "resource_tracker" not in _cmdline(k)]
    return kids or [pid]


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU time consumed so far by these processes (exited ones count 0)."""
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # the name may contain spaces
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / _TICKS


def system_busy_seconds() -> float:
    """CPU time all CPUs spent busy since boot (/proc/stat: everything but idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / _TICKS


def reaped_cpu_seconds() -> float:
    """CPU time of this process's reaped children: the wrk runs."""
    times = os.times()
    return times.children_user + times.children_system


def own_cpu_seconds(pgids: Sequence[int]) -> float:
    """CPU time of this process, of its reaped children (the wrk runs) and of every live
    process in the process groups `pgids` (the servers started by the benchmark)."""
    times = os.times()
    total = times.user + times.system + times.children_user + times.children_system
    wanted = set(pgids)
    ticks = 0
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in wanted:  # pgrp (field 5)
            ticks += int(fields[11]) + int(fields[12])
    return total + ticks / _TICKS


class OtherLoad:
    """From its creation on: the CPU the whole machine uses minus what the benchmark's own
    processes (this one, the wrk runs, the process groups `pgids`) use, in cores."""

    def __init__(self, pgids: Sequence[int]) -> None:
        self.pgids = list(pgids)
        self._busy, self._own = system_busy_seconds(), own_cpu_seconds(self.pgids)
        self._wall = time.monotonic()

    def cores(self) -> float:
        others = system_busy_seconds() - self._busy - (own_cpu_seconds(self.pgids) - self._own)
        return max(0.0, others / (time.monotonic() - self._wall))
