"""Run the real `unigate serve` process for end-to-end tests, with its log captured."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support import config_yaml, markers
from tests.support.net import HTTPResult, free_port, http
from unigate.config_source import ENV_VENDORS

ADMIN_KEY = "uga_test_" + secrets.token_hex(16)


class GatewayCalls:
    """The admin calls a test makes on a running gateway (a process or one served in-process)."""

    base_url: str

    def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> HTTPResult:
        return http(method, self.base_url + path, body, {"Authorization": f"Bearer {ADMIN_KEY}"})

    def create_key(self, **spec: Any) -> str:
        return str(self.create_key_record(**spec)["key"])

    def create_key_record(self, **spec: Any) -> dict[str, Any]:
        spec.setdefault("name", "test")
        res = self.admin("POST", "/admin/keys", spec)
        assert res.status == 201, res.body
        return dict(res.json())


class GatewayProcess(GatewayCalls):
    def __init__(
        self,
        workdir: Path,
        config: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        workers: int = 1,
        prefix: list[str] | None = None,
    ) -> None:
        self.workdir = workdir
        # Runs the server under another command (e.g. one that mounts its data dir first),
        # which must end by exec'ing the server so `proc.pid` stays the server's.
        self.prefix = prefix or []
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"gateway-{self.port}.log"
        self.env = {
            **os.environ,
            "UNIGATE_DATA_DIR": str(workdir / "data"),
            "UNIGATE_ADMIN_KEY": ADMIN_KEY,
            "UNIGATE_LOG_LEVEL": "info",
            **(env or {}),
        }
        for vendor in ENV_VENDORS.values():  # the keys that would add providers without a config
            for name in vendor.keys:
                self.env.pop(name, None)
        if config is not None:
            path = workdir / f"config-{self.port}.yaml"
            path.write_text(config_yaml.dump(config))
            self.env["UNIGATE_CONFIG"] = str(path)
        self.workers = workers
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30) -> GatewayProcess:
        markers.require("process", "a `unigate serve` process")
        command = [*self.prefix, sys.executable, "-m", "unigate", "serve"]
        command += ["--port", str(self.port), "--workers", str(self.workers)]
        with self.log_path.open("ab") as log:  # the child writes to its own copy of the descriptor
            self.proc = subprocess.Popen(
                command, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited early:\n{self.log()}")
            try:
                if http("GET", self.base_url + "/readyz", timeout=1).status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"gateway did not become ready:\n{self.log()}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> GatewayProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


SHARED_DATABASE = "shared.db"


def on_shared_database(tmp_path: Path, name: str, config: dict[str, Any]) -> GatewayProcess:
    """A gateway process (not started) with its data dir in `tmp_path / name` and its database
    `tmp_path / SHARED_DATABASE`, which every process made so for the same `tmp_path` shares:
    one killed, the next takes its work over."""
    (tmp_path / name).mkdir(exist_ok=True)
    database = f"sqlite:///{tmp_path / SHARED_DATABASE}"
    return GatewayProcess(tmp_path / name, config=config, env={"UNIGATE_DATABASE_URL": database})


def serve_refused(workdir: Path, config_text: str | bytes) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Run `unigate serve` on a config that must be refused before it starts."""
    markers.require("process", "a `unigate serve` process")
    config = workdir / "bad.yaml"
    if isinstance(config_text, bytes):
        config.write_bytes(config_text)
    else:
        config.write_text(config_text)
    proc = subprocess.run(
        [sys.executable, "-m", "unigate", "serve", "--config", str(config)],
        env={**os.environ, "UNIGATE_DATA_DIR": str(workdir / "d")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return config, proc
