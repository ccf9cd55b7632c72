"""A throwaway S3-compatible server for the storage tests: moto's server (`moto[server]` from
PyPI, in the test extra) on a free loopback port, in its own process. It speaks the S3 wire
protocol (path-style), keeps everything in memory and checks no signature, so any credentials
do; the tests still pass the standard AWS variables, as a deployment would. MinIO, the usual
choice, is not packaged on PyPI, Debian or npm; moto's server is."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.support import markers
from tests.support.net import free_port

# Fake credentials: moto accepts any. Named like the real variables so the gateway's client
# finds them where a deployment puts them.
TEST_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "unigate-test-access",
    "AWS_SECRET_ACCESS_KEY": "unigate-test-secret-not-real",
}


@contextmanager
def credentials_in_env() -> Iterator[None]:
    """TEST_CREDENTIALS in this process's environment (where the S3 client reads them) for
    the block, the previous values back afterwards."""
    saved = {name: os.environ.get(name) for name in TEST_CREDENTIALS}
    os.environ.update(TEST_CREDENTIALS)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class S3Server:
    endpoint: str
    port: int
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        markers.require("services", "an S3 server")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("moto server exited: is moto[server] installed (the test extra)?")
            if self._answers():
                return
            time.sleep(0.05)
        raise RuntimeError("moto server did not answer within 20 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint + "/", timeout=1):
                return True
        except urllib.error.HTTPError:
            return True  # any S3 answer (403 without credentials on a real server) will do
        except OSError:
            return False

    def create_bucket(self, name: str | None = None) -> str:
        """A new empty bucket (moto needs no signature to create one)."""
        name = name or "unigate-test-" + secrets.token_hex(4)
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=10):
            pass
        return name

    def storage_config(self, bucket: str, **extra: Any) -> dict[str, Any]:
        """The gateway's `storage:` section for `bucket` on this server."""
        return {
            "backend": "s3",
            "bucket": bucket,
            "endpoint_url": self.endpoint,
            "region": "us-east-1",
            "path_style": True,
            **extra,
        }


@contextmanager
def s3_server() -> Iterator[S3Server]:
    port = free_port()
    server = S3Server(f"http://127.0.0.1:{port}", port)
    server.start()
    try:
        yield server
    finally:
        server.stop()
