"""uvicorn's worker supervisor, with SIGHUP passed on to the workers instead of restarting them.

uvicorn's own SIGHUP replaces every worker with a fresh one: requests under way are cut, and a
worker started on a config file that no longer loads fails. Here each worker gets the signal
and reloads the config in place (reload.py), keeping what it runs when the file is broken.

SIGHUP stays blocked in this process (cli/launch.py blocks it before the workers exist), so
every worker starts with it blocked and takes it only once its handler is in place: a signal
sent while a worker starts waits for it instead of killing it. This process collects it with
`sigtimedwait` on each turn of the supervisor's loop (every half second).

The workers are forked from this process once it has imported the app (`fork_workers`, after
launch.py's `preload_app`), not spawned as fresh interpreters: the modules' pages (the
interpreter, SQLAlchemy, pydantic, the gateway's own code) are then shared copy-on-write between
the workers instead of each holding its own copy. Nothing is built before the fork: each worker
creates its app, engine and connections itself, as a spawned one does.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal

import uvicorn._subprocess
from uvicorn.supervisors.multiprocess import SIGNALS, Multiprocess

from unigate.cli.parent_death import end_workers_with_this_process

# Without sigtimedwait (macOS) SIGHUP is left unblocked: uvicorn's own handler queues it, and a
# worker it reaches before its handler exists dies and is replaced.
_WAITS = hasattr(signal, "sigtimedwait")


def fork_workers() -> None:
    """From here on, uvicorn's workers are forked from this process, with what it has imported."""
    # Each starts with a spawned worker's signal handlers, and ends with this process.
    end_workers_with_this_process(_default_signals)
    # uvicorn starts every worker (at start, and each replacement) from this one context; a
    # release that drops it spawns them again, which costs memory but changes no behaviour.
    uvicorn._subprocess.spawn = multiprocessing.get_context("fork")  # type: ignore[assignment]


def _default_signals() -> None:
    """A forked worker starts with the handlers a spawned one has, not the supervisor's
    (which queue the signal for the supervisor's loop): SIGINT raises KeyboardInterrupt,
    the others take their default action until the server installs its own."""
    for sig in SIGNALS:
        signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)


def block_sighup() -> None:
    """From here on, in this process and the processes it starts, SIGHUP waits until unblocked."""
    if _WAITS:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})


class ReloadingMultiprocess(Multiprocess):
    def handle_signals(self) -> None:
        if _WAITS and signal.sigtimedwait([signal.SIGHUP], 0) is not None:
            self.signal_queue.append(signal.SIGHUP)
        super().handle_signals()

    def handle_hup(self) -> None:
        for process in self.processes:
            pid = process.pid
            if pid is None or not process.process.is_alive():
                continue  # one being replaced reads the file when it starts
            with contextlib.suppress(ProcessLookupError):  # it just exited
                os.kill(pid, signal.SIGHUP)
