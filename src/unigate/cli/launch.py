"""The process `unigate serve` becomes (by exec): the HTTP server, announced once it listens.

`serve` checks everything it can up front, then replaces itself with this module so the
server keeps the CLI's process id (signals, supervisors) without the CLI's imports. The
announcement "unigate listening on …" is printed here, once the socket is bound and accepting
connections; a server that stops before that ends with one `error:` line and exit code 2.
Only the standard library is imported at module level: a worker process a server spawns (rather
than forks, as `cli/supervisor.py` has uvicorn do) re-imports this module as its `__main__`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import signal
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from unigate.config_source import LoadedConfig

APP = "unigate.app:app_factory"
STARTUP_FAILED = 2


class NotListening(Exception):
    """The server stopped (or could not bind) before it was listening."""


def listen_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def bind(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """Bind and listen the way uvicorn does (SO_REUSEADDR, IPv6 for addresses with a colon)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _json_logs() -> bool:
    """With UNIGATE_LOG_FORMAT=json the server's own lines (this process's, and the workers'
    once the app set up logging) go through unigate's JSON handler instead of the server's
    text handlers."""
    from unigate.settings import Settings

    settings = Settings.from_env()
    if settings.log_format != "json":
        return False
    from unigate.observability.logs import configure_logging

    configure_logging(settings.log_level, "json")
    return True


def uvicorn_options() -> dict[str, Any]:
    """How uvicorn runs the app, whatever the address and workers (the test suite serves the app
    in-process with these too)."""
    from unigate.edge.h1_protocol import H1Protocol

    return {
        "loop": "uvloop",
        "http": H1Protocol,  # the project's own httptools protocol, with the server guard's limits
        "ws": "none",  # the gateway serves no WebSocket: the websockets package stays unloaded
        "log_level": "warning",
        "access_log": False,
        "timeout_keep_alive": 30,
        "lifespan": "on",
        # The app never reads the client's address: uvicorn's X-Forwarded-For rewriting of it
        # would be work per request for nothing.
        "proxy_headers": False,
        # Said outright: the app's __call__ returns the request coroutine instead of being one,
        # which uvicorn's auto-detection would take for ASGI 2.
        "interface": "asgi3",
    }


def preload_app() -> LoadedConfig | None:
    """Import the app, and everything it imports, in this process before the server forks its
    workers, and freeze it out of the cycle collector (whose passes write to every object they
    visit, copying its page): the workers then share those pages copy-on-write instead of each
    loading its own copy. The configuration is loaded here too, for the workers to take while
    its file is unchanged (`LoadedConfig`); each worker creates its app itself."""
    import gc
    import importlib

    importlib.import_module(APP.split(":")[0])
    loaded = _load_config()
    gc.collect()
    gc.freeze()
    return loaded


def _load_config() -> LoadedConfig | None:
    """The configuration, and the adapters of the protocols it uses, built in or a plugin's
    (the sandbox): imported at a worker's start otherwise (`providers/registry.py`), each worker
    would hold its own copy of their pages. None when it does not load: `serve` checked the
    file; a change since is each worker's to report, as is an adapter that does not import."""
    from unigate.config_source import LoadedConfig
    from unigate.providers.registry import provider_class
    from unigate.settings import Settings

    settings = Settings.from_env()
    try:
        loaded = LoadedConfig.load(settings.config_path, settings.environ)
    except Exception:
        return None
    for provider in loaded.config.providers:
        with contextlib.suppress(Exception):
            provider_class(provider)
    return loaded


def _run_uvicorn(host: str, port: int, workers: int, announce: Callable[[], None]) -> None:
    import uvicorn
    from uvicorn.supervisors.multiprocess import Multiprocess

    from unigate.cli.supervisor import ReloadingMultiprocess, block_sighup, fork_workers

    # None: uvicorn installs no handlers of its own; its loggers reach unigate's.
    logging: dict[str, Any] = {"log_config": None} if _json_logs() else {}
    config = uvicorn.Config(
        APP, factory=True, host=host, port=port, workers=workers, **uvicorn_options(), **logging
    )
    # Bound and listening here, before the app starts: connections made from now on wait in
    # the backlog and are served once the workers are up.
    sock = bind(host, port, config.backlog)
    announce()
    # SIGHUP reloads the config (reload.py); until a worker's handler is in place it waits
    # rather than killing the process (the default action).
    block_sighup()
    server = uvicorn.Server(config)
    if workers == 1:
        server.run(sockets=[sock])
        if not server.started:
            raise NotListening("the app did not start")
        return
    # `target` left Multiprocess's signature in uvicorn 0.36; older releases need it.
    kwargs: dict[str, Any] = {"sockets": [sock]}
    if "target" in inspect.signature(Multiprocess).parameters:
        kwargs["target"] = server.run
    loaded = preload_app()
    if loaded is not None:  # the workers (forked: the object is theirs too) take it while current
        from unigate.app import app_factory

        config.app = functools.partial(app_factory, loaded)
    fork_workers()  # uvicorn would spawn fresh interpreters
    ReloadingMultiprocess(config, **kwargs).run()  # passes SIGHUP on to the workers


def _run_granian(host: str, port: int, workers: int, announce: Callable[[], None]) -> None:
    from granian import Granian
    from granian.constants import HTTPModes, Interfaces, Loops
    from granian.log import LogLevels

    json_format = {"()": "unigate.observability.logs.JsonFormatter"}
    logging = {"formatters": {"generic": json_format, "access": json_format}} if _json_logs() else None
    server = Granian(
        APP,
        factory=True,
        address=host,
        port=port,
        workers=workers,
        interface=Interfaces.ASGI,
        http=HTTPModes.http1,
        websockets=False,
        loop=Loops.uvloop,
        log_level=LogLevels.warning,
        log_dictconfig=logging,
    )
    # Granian binds its shared socket before it runs the startup hooks and starts workers,
    # forked where multiprocessing forks (Linux up to Python 3.13), so they share what this loaded.
    server.on_startup(announce)
    from unigate.cli.parent_death import end_workers_with_this_process

    end_workers_with_this_process(signum=signal.SIGKILL)  # see parent_death.py for why not SIGTERM
    if workers > 1:  # one worker shares with nobody: the copy here would only add to the total
        preload_app()
    server.serve()


def _raise_fd_limit() -> None:
    """Up to the hard limit: every client and upstream connection is a file descriptor, and
    the common default soft limit (1024) is reached long before the connection cap."""
    import contextlib
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft < wanted:
        # Left as it is when refused: running out is answered with 503s, not a crash.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def main(argv: list[str]) -> None:
    server, host, port, workers = argv[0], argv[1], int(argv[2]), int(argv[3])
    _raise_fd_limit()
    announced = False

    from unigate.cli.pidfile import remove_pid, write_pid
    from unigate.settings import Settings

    data_dir = Settings.from_env().data_dir

    def announce() -> None:
        nonlocal announced
        announced = True
        write_pid(data_dir)  # for `unigate reload`
        plural = "s" if workers > 1 else ""
        print(f"unigate listening on {listen_url(host, port)} ({workers} worker{plural})", flush=True)

    def leave() -> None:
        remove_pid(data_dir)
        if workers > 1:  # the workers' shared limits table: its semaphore outlives processes
            from unigate.limits.backend import counters_path
            from unigate.limits.shared_table import SharedTable

            SharedTable.remove(counters_path(data_dir))

    def remove_then_stop(signum: int, _frame: object) -> None:
        # uvicorn ends a SIGTERM'd server by raising the signal again once it has shut down,
        # to this handler (the one in place before it started): the pid file goes first.
        leave()
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    signal.signal(signal.SIGTERM, remove_then_stop)
    run = _run_granian if server == "granian" else _run_uvicorn
    fix = "see the server's log above (UNIGATE_LOG_LEVEL=debug shows more)"
    try:
        try:
            run(host, port, workers, announce)
        finally:
            leave()
    except KeyboardInterrupt:
        return
    except SystemExit as exc:
        if announced or not exc.code:
            raise
        reason = f"the {server} server exited with code {exc.code}"
    except NotListening as exc:
        reason = str(exc)
    except OSError as exc:
        if announced:
            raise
        reason = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        fix = "stop what holds the port or pick another with --port"
    else:
        return
    print(f"error: unigate did not start: {reason}; {fix}", file=sys.stderr, flush=True)
    sys.exit(STARTUP_FAILED)


if __name__ == "__main__":
    main(sys.argv[1:])
