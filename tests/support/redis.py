"""A throwaway Redis server for the scale-out tests, started from Debian's `redis-server`
(`scripts/test.sh` installs it): on a free loopback port, no persistence, stopped and started
again on the same port by the fault tests. `UNIGATE_TEST_REDIS_URL` points at an existing
server instead (then stop/start are not available)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import markers
from tests.support.net import free_port


@dataclass
class RedisServer:
    port: int
    workdir: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        markers.require("services", "a Redis server")
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found: install Debian's redis-server (scripts/test.sh does)")
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--dir", str(self.workdir), "--logfile", str(self.workdir / "redis.log")]
        self.proc = subprocess.Popen(
            [binary, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {(self.workdir / 'redis.log').read_text()[-2000:]}")
            if _answers(self.port):
                return
            time.sleep(0.02)
        raise RuntimeError("redis-server did not answer PING within 10 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A running throwaway Redis; `.url` for the gateway's UNIGATE_REDIS_URL."""
    existing = os.environ.get("UNIGATE_TEST_REDIS_URL")
    if existing:
        port = int(existing.rsplit(":", 1)[1].split("/")[0])
        yield RedisServer(port, Path(tempfile.gettempdir()))
        return
    with tempfile.TemporaryDirectory(prefix="unigate-redis-") as tmp:
        server = RedisServer(free_port(), Path(tmp))
        server.start()
        try:
            yield server
        finally:
            server.stop()
