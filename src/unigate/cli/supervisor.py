"""uvicorn's worker supervisor, with SIGHUP passed on to the workers instead of restarting them.

uvicorn's own SIGHUP replaces every worker with a fresh one: requests under way are cut, and a
worker started on a config file that no longer loads fails. Here each worker gets the signal
and reloads the config in place (reload.py), keeping what it runs when the file is broken.

SIGHUP stays blocked in this process (cli/launch.py blocks it before the workers exist), so
every worker starts with it blocked and takes it only once its handler is in place: a signal
sent while a worker starts waits for it instead of killing it. This process collects it with
`sigtimedwait` on each turn of the supervisor's loop (every half second).
"""

from __future__ import annotations

import contextlib
import os
import signal

from uvicorn.supervisors.multiprocess import Multiprocess

# Without sigtimedwait (macOS) SIGHUP is left unblocked: uvicorn's own handler queues it, and a
# worker it reaches before its handler exists dies and is replaced.
_WAITS = hasattr(signal, "sigtimedwait")


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
