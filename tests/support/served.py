"""The gateway served by uvicorn in a thread of the test process, on a loopback port.

The same app, server and protocol as `unigate serve` (uvicorn with unigate's guarded httptools
protocol and the options `serve` passes it), so a test talks HTTP to it exactly as to the real
process, SDKs included: only the process around it is missing. Start-up takes a fraction of a
second instead of the seconds a new interpreter costs. Tests that need the process itself
(start-up checks, signals, several workers, kill -9) use `GatewayProcess`.

Each instance writes its log to its own file (`log()`): a handler on the root logger sends a
record to the instance whose server thread (or a task or thread that thread started) emitted
it, in the format the instance's settings choose.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from pathlib import Path
from typing import IO, Any

import uvicorn

from tests.support import config_yaml
from tests.support.gateway import ADMIN_KEY, GatewayCalls
from unigate.app import create_app
from unigate.cli.launch import bind, uvicorn_options
from unigate.observability.logs import FORMAT, JsonFormatter
from unigate.settings import Settings

# Variables read from the process environment rather than through the instance's `Settings`
# (the server guard's limits, the egress proxy): an instance in this process cannot have them
# to itself, so tests that set them use `GatewayProcess`.
_PROCESS_VARS = ("UNIGATE_HEADER_TIMEOUT", "UNIGATE_BODY_TIMEOUT", "UNIGATE_MAX_CONNECTIONS", "PYTHON")
_PROXY_VARS = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")
_CURRENT: contextvars.ContextVar[ServedGateway | None] = contextvars.ContextVar("gateway", default=None)


class _InstanceLogs(logging.Handler):
    """Routes each record to the log file of the instance it came from."""

    def __init__(self) -> None:
        super().__init__()
        self.running: list[ServedGateway] = []

    def emit(self, record: logging.LogRecord) -> None:
        gw = _CURRENT.get()
        # A record from outside any instance's context (a thread the server did not start):
        # every running instance gets it rather than none.
        for target in [gw] if gw is not None else list(self.running):
            target._write_record(record)


_LOGS = _InstanceLogs()
_LOGS_LOCK = threading.Lock()


def _attach(gw: ServedGateway) -> None:
    with _LOGS_LOCK:
        if _LOGS not in logging.root.handlers:
            logging.root.addHandler(_LOGS)
        _LOGS.running.append(gw)
        _set_level()


def _detach(gw: ServedGateway) -> None:
    with _LOGS_LOCK:
        if gw in _LOGS.running:
            _LOGS.running.remove(gw)
        _set_level()


def _set_level() -> None:
    # Only unigate's own loggers follow the instances' level: third-party ones stay at the
    # root's (WARNING), as `configure_logging` keeps them (their debug output carries secrets).
    levels = [gw.log_level for gw in _LOGS.running]
    logging.getLogger("unigate").setLevel(min(levels) if levels else logging.NOTSET)


class ServedGateway(GatewayCalls):
    def __init__(
        self,
        workdir: Path,
        config: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self._sock = bind("127.0.0.1", 0)
        self.port = int(self._sock.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"gateway-{self.port}.log"
        # As GatewayProcess's: the environment a CLI run beside it needs, the gateway's own
        # variables set, the vendor keys of the machine's environment removed.
        self._own_env = dict(env or {})
        self.env = {
            **os.environ,
            "UNIGATE_DATA_DIR": str(workdir / "data"),
            "UNIGATE_ADMIN_KEY": ADMIN_KEY,
            "UNIGATE_LOG_LEVEL": "info",
            # One worker, as `serve` tells its single worker.
            "UNIGATE_WORKERS": "1",
            **(env or {}),
        }
        for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
            if name not in self._own_env:
                self.env.pop(name, None)
        if config is not None:
            path = workdir / f"config-{self.port}.yaml"
            path.write_text(config_yaml.dump(config))
            self.env["UNIGATE_CONFIG"] = str(path)
        self.log_level = logging.INFO
        self._formatter = logging.Formatter(FORMAT)
        self._log_file: IO[str] | None = None
        self._log_lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def start(self, timeout: float = 30) -> ServedGateway:
        foreign = sorted(
            name for name in self._own_env if name.startswith(_PROCESS_VARS) or name.lower() in _PROXY_VARS
        )
        if foreign:
            raise ValueError(f"{foreign} are read from the process environment: use GatewayProcess")
        self.settings = Settings.from_env(self.env)  # read here: a test may change `env` first
        self.log_level = logging.DEBUG if self.settings.log_level == "debug" else logging.INFO
        json_lines = self.settings.log_format == "json"
        self._formatter = JsonFormatter() if json_lines else logging.Formatter(FORMAT)
        self._log_file = self.log_path.open("a", encoding="utf-8")
        _attach(self)
        app = create_app(self.settings)
        self.app = app  # tests reach the running app (a stand-in service, its state)
        config = uvicorn.Config(app, log_config=None, **uvicorn_options())
        self._server = uvicorn.Server(config)
        context = contextvars.copy_context()
        context.run(_CURRENT.set, self)
        self._thread = threading.Thread(
            target=context.run, args=(self._serve,), name=f"gateway-{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"gateway did not start ({self._failure!r}):\n{self.log()}")
            time.sleep(0.005)
        # The app's own gc.freeze is left out in the test process (tests/support/gc_baseline.py).
        return self

    def _serve(self) -> None:
        assert self._server is not None
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as exc:  # reported by start() or stop()
            self._failure = exc
            logging.getLogger("unigate").exception("the in-process server failed")

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(30)
            if self._thread.is_alive():
                raise RuntimeError(f"gateway on port {self.port} did not stop within 30 s")
            self._server = None
        self._sock.close()
        _detach(self)
        if self._log_file is not None:
            with self._log_lock:
                self._log_file.close()
                self._log_file = None

    def _write_record(self, record: logging.LogRecord) -> None:
        if record.levelno < self.log_level and record.name.startswith("unigate"):
            return
        text = self._formatter.format(record)
        with self._log_lock:
            if self._log_file is not None:
                self._log_file.write(text + "\n")
                self._log_file.flush()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> ServedGateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
