"""Optional sampling profile of a server under load with py-spy (`--profile`): where the
worker's GIL time goes, from outside the process, without pausing it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from procs import BenchError

RATE_HZ = 100
_LINE_NO = re.compile(r":\d+\)$")


def find_py_spy() -> str:
    found = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if found is None:
        raise BenchError("--profile needs py-spy on PATH or in this venv (pip install py-spy)")
    return found


class Recording:
    """`py-spy record` of one process for `duration` s, started now."""

    def __init__(self, py_spy: str, pid: int, duration: float, out: Path) -> None:
        self.out = out
        self.duration = duration
        cmd = [
            py_spy,
            "record",
            "--nonblocking",  # sample without stopping the server: the numbers stay honest
            "--gil",  # only samples where a thread holds the GIL: CPU spent in Python
            "--rate",
            str(RATE_HZ),
            "--format",
            "raw",
            "--output",
            str(out),
            "--duration",
            str(max(1, round(duration))),
            "--pid",
            str(pid),
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def finish(self) -> Profile:
        try:
            _, err = self.proc.communicate(timeout=self.duration + 30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        if not self.out.exists():
            raise BenchError(f"py-spy wrote no profile ({self.proc.returncode}): {err.decode()[-500:]}")
        return Profile.read(self.out, self.duration)


@dataclass(frozen=True)
class Profile:
    samples: int
    duration: float
    own: Counter[str]  # samples whose innermost frame is this function
    total: Counter[str]  # samples with this function anywhere on the stack

    @classmethod
    def read(cls, path: Path, duration: float) -> Profile:
        own: Counter[str] = Counter()
        total: Counter[str] = Counter()
        samples = 0
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            samples += n
            frames = [_LINE_NO.sub(")", f) for f in stack.split(";")]
            own[frames[-1]] += n
            for frame in set(frames):
                total[frame] += n
        return cls(samples, duration, own, total)

    @property
    def gil_share(self) -> float:
        """Share of the run during which some thread of the server held the GIL."""
        return self.samples / (RATE_HZ * self.duration) if self.duration else 0.0

    def summary(self, top: int = 12) -> list[str]:
        if not self.samples:
            return ["    (no samples)"]

        def pct(n: int) -> str:
            return f"{100 * n / self.samples:5.1f}%"

        held = f"{100 * self.gil_share:.0f}% of the run ({self.samples} samples)"
        lines = [f"    GIL held {held}; top self time:"]
        lines += [f"      {pct(n)}  {frame}" for frame, n in self.own.most_common(top)]
        lines.append("    unigate functions by inclusive time:")
        ours = [(f, n) for f, n in self.total.most_common() if "unigate/" in f]
        lines += [f"      {pct(n)}  {frame}" for frame, n in ours[:top]]
        return lines
