"""Workers that end with the process that forked them.

A supervisor stopped by SIGTERM or SIGINT stops its workers itself. One killed outright
(`kill -9`, the OOM killer) cannot: its workers went on serving the inherited socket with
nobody to restart or reload them, holding the port against the next `unigate serve`. A worker
forked after `end_workers_with_this_process` asks the kernel for a signal when the process that
forked it dies (Linux's `prctl(PR_SET_PDEATHSIG)`; elsewhere a worker outlives such a supervisor
as before). uvicorn's workers (cli/supervisor.py) get SIGTERM, their graceful stop. granian's
(cli/launch.py) get SIGKILL: a granian worker (2.8.7 and 2.8.9) sent SIGTERM as its supervisor
died hung about once in eight under load, in granian's own signal handler, and would then
have outlived it as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies


def _nothing() -> None:
    pass


def end_workers_with_this_process(
    in_worker: Callable[[], None] = _nothing, signum: int = signal.SIGTERM
) -> None:
    """From here on, each process this one forks runs `in_worker`, and is sent `signum` when
    this one dies. A process a worker forks in turn is left alone: it is not this process's
    worker."""
    supervisor = os.getpid()
    forking = [0]  # the pid of the process about to fork, as the child finds it

    def before() -> None:
        forking[0] = os.getpid()

    def after_in_child() -> None:
        if forking[0] == supervisor:
            in_worker()
            _end_with(supervisor, signum)

    os.register_at_fork(before=before, after_in_child=after_in_child)


def _end_with(supervisor: int, signum: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            return
    if os.getppid() != supervisor:  # it died between the fork and the prctl
        os.kill(os.getpid(), signum)
