"""The running server's process id, kept in the data directory (`unigate.pid`) while it
listens, so `unigate reload` can signal it (SIGHUP) without the user finding the pid. Only the
standard library: the server process (cli/launch.py) writes it."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

NAME = "unigate.pid"


def pid_path(data_dir: Path) -> Path:
    return data_dir / NAME


def write_pid(data_dir: Path) -> None:
    """This process's id, written once it listens (best effort: a read-only directory only
    costs `unigate reload`, which then says so)."""
    with contextlib.suppress(OSError):
        tmp = pid_path(data_dir).with_suffix(".pid.tmp")
        tmp.write_text(f"{os.getpid()}\n")
        tmp.replace(pid_path(data_dir))


def remove_pid(data_dir: Path) -> None:
    """Removed at exit, only when it still names this process (another server may have taken
    the data directory over)."""
    path = pid_path(data_dir)
    with contextlib.suppress(OSError, ValueError):
        if int(path.read_text().strip()) == os.getpid():
            path.unlink()


class NoServer(Exception):
    """No running server is recorded in the data directory; the message says why."""


def server_pid(data_dir: Path) -> int:
    """The pid of the `unigate serve` running on `data_dir`, or NoServer."""
    path = pid_path(data_dir)
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        raise NoServer(
            f"no running `unigate serve` uses the data directory {data_dir} ({path} does not exist)"
        ) from None
    except OSError as exc:
        raise NoServer(f"cannot read {path}: {exc.strerror}") from None
    if not text.isdigit():
        raise NoServer(f"{path} does not hold a process id")
    pid = int(text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise NoServer(f"the server recorded in {path} (pid {pid}) is not running (a stale file)") from None
    except PermissionError:
        raise NoServer(f"the server recorded in {path} (pid {pid}) belongs to another user") from None
    if sys.platform.startswith("linux"):
        # A pid reused by another program must not get a SIGHUP (which would end most programs).
        with contextlib.suppress(OSError):
            if b"unigate" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                raise NoServer(f"pid {pid} in {path} is not a unigate server any more (a stale file)")
    return pid
