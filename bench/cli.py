"""What the two benchmarks (`run.py`, `tasks.py`) share around their measurements: the common
command-line options, the banner, the temporary directory and the clean-up at the end, the
run's metadata and the JSON results file."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from procs import BenchError, Children

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"

# bench(args, children, tmp) -> exit status; raises BenchError when it cannot run.
Bench = Callable[[argparse.Namespace, Children, Path], int]


def log(message: str) -> None:
    print(message, flush=True)


def bench_parser(
    description: str, duration_help: str, quick_help: str, connections_help: str
) -> argparse.ArgumentParser:
    """A parser with the options both benchmarks take: --duration, --quick, --connections."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--duration", type=float, default=8.0, help=duration_help)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--connections", type=int, default=64, help=connections_help)
    return parser


def parse_bench_args(
    parser: argparse.ArgumentParser, counts: Sequence[str], error: str
) -> argparse.Namespace:
    """Parse the command line: --quick means 3 s runs; --duration and the options `counts`
    must be at least 1 (else `error`)."""
    args = parser.parse_args()
    if args.quick:
        args.duration = 3.0
    if args.duration < 1 or any(getattr(args, name) < 1 for name in counts):
        parser.error(error)
    return args


def _git(*args: str) -> str:
    cmd = ["git", "-C", str(BENCH_DIR.parent), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def git_revision() -> str:
    try:
        rev = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("-dirty" if dirty else "")


def base_meta() -> dict[str, Any]:
    """The start of a results file's `meta`: when, which revision, on what."""
    return {
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git": git_revision(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "python_build": python_build(),
    }


def python_build() -> str:
    """Which interpreter ran, and the optimisation flags its build was configured with: an
    unoptimised CPython build (pyenv's default) costs the gateway ~20% more per request than a
    PGO and LTO one (docs/benchmarks.md). Distribution builds (Debian's) are optimised by their
    own rules, outside these flags."""
    flags = sysconfig.get_config_var("CONFIG_ARGS") or ""
    named = [f for f in ("--enable-optimizations", "--with-lto") if f in flags]
    configured = ", ".join(named) or "neither PGO nor LTO flag"
    return f"{os.path.realpath(sys.executable)} (configured with: {configured})"


def write_results(path: Path, summary: dict[str, Any]) -> None:
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    log(f"Results written to {path.relative_to(BENCH_DIR.parent)}")


def _terminate(signum: int, _frame: object) -> NoReturn:
    raise SystemExit(128 + signum)


def run_main(title: str, tmp_prefix: str, args: argparse.Namespace, bench: Bench) -> int:
    """Print the banner, run `bench` with a fresh temporary directory, then stop every process
    it started and remove the directory, whatever happened. Exit status: bench's, 2 when it
    raised BenchError, 130 on Ctrl-C, 128 + N on signal N."""
    signal.signal(signal.SIGTERM, _terminate)
    log(
        f"{title} ({os.cpu_count()} CPUs, {platform.python_implementation()} "
        f"{platform.python_version()}, git {git_revision()})"
    )
    started = time.monotonic()
    children = Children()
    tmp = Path(tempfile.mkdtemp(prefix=tmp_prefix))
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
        log(f"Done in {time.monotonic() - started:.0f} s; all benchmark processes stopped.")
