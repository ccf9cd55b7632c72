"""`unigate reload`: tell the `unigate serve` running on this data directory to read its config
file again (SIGHUP to the pid it keeps in `unigate.pid`; every worker reloads, and the server's
log says what changed). The same as `POST /admin/reload`, without the admin key or the URL."""

from __future__ import annotations

import os
import signal

from unigate.cli.pidfile import NoServer, server_pid
from unigate.cli.serve import ConfigOpt, settings_for
from unigate.cli.startup import StartupError, debug_wanted, report


def reload(config: ConfigOpt = None) -> None:
    """Reload the config file of the server running on this data directory (UNIGATE_DATA_DIR)."""
    data_dir = settings_for(config).data_dir
    try:
        pid = server_pid(data_dir)
        os.kill(pid, signal.SIGHUP)
    except NoServer as exc:
        report(
            StartupError(
                f"{exc}; run this where `unigate serve` runs (the same UNIGATE_DATA_DIR), or call "
                "POST /admin/reload with the admin key"
            ),
            debug_wanted(),
        )
    except OSError as exc:
        report(StartupError(f"cannot signal the server (pid {pid}): {exc.strerror}"), debug_wanted())
    print(f"sent SIGHUP to unigate serve (pid {pid}); its log's 'config reloaded' line says what changed")
