"""The server's own limits (edge/server_guard.py) against the real `unigate serve`: a huge request
head is refused fast, heads and bodies that stop arriving are dropped, and a flood of idle
connections cannot lock out `/healthz`, which answers quickly throughout."""

from __future__ import annotations

import contextlib
import resource
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.gateway import GatewayProcess
from tests.support.net import http

pytestmark = pytest.mark.process

LIMITS = {"UNIGATE_HEADER_TIMEOUT": "1", "UNIGATE_BODY_TIMEOUT": "1", "UNIGATE_MAX_CONNECTIONS": "300"}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with GatewayProcess(tmp_path_factory.mktemp("guard"), env=LIMITS) as g:
        yield g


class HealthProbe:
    """Polls /healthz from a thread while a test attacks; `worst` is the slowest answer."""

    def __init__(self, gw: GatewayProcess) -> None:
        self.gw = gw
        self.worst = 0.0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                ok = http("GET", self.gw.base_url + "/healthz", timeout=5).status == 200
            except OSError:
                ok = False
            self.worst = max(self.worst, time.monotonic() - started)
            self.failures += 0 if ok else 1
            time.sleep(0.02)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def _connect(gw: GatewayProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", gw.port), timeout=10)


def _answer(sock: socket.socket) -> bytes:
    """What the server sends before it closes (b"" for a silent close)."""
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks)


def test_a_huge_request_head_is_refused_fast(gw: GatewayProcess) -> None:
    with HealthProbe(gw) as probe:
        with _connect(gw) as sock:
            started = time.monotonic()
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
            with contextlib.suppress(ConnectionError):
                for _ in range(50 * 16):  # up to 50 MB, 64 KiB at a time, until refused
                    sock.sendall(b"a" * 65536)
            answer = _answer(sock)
            assert answer.startswith(b"HTTP/1.1 431 "), answer[:100]
            assert time.monotonic() - started < 2.0
        # A big but allowed head still works.
        res = http("GET", gw.base_url + "/healthz", headers={"X-Fine": "b" * 30_000})
        assert res.status == 200
    print(f"huge head: 431, healthz worst {probe.worst * 1000:.0f} ms")
    assert probe.failures == 0 and probe.worst < 0.5


def test_silent_and_trickling_heads_are_dropped(gw: GatewayProcess) -> None:
    with _connect(gw) as silent, _connect(gw) as trickle:
        started = time.monotonic()
        trickle.sendall(b"GET /healthz HTTP/1.1\r\n")
        time.sleep(0.5)
        trickle.sendall(b"Host: x\r\n")  # never finished
        assert _answer(silent) == b""
        assert _answer(trickle).startswith(b"HTTP/1.1 408 ")
        assert time.monotonic() - started < 4.0  # 1 s timeout, swept once a second


def test_a_body_that_stops_arriving_is_dropped(gw: GatewayProcess) -> None:
    key = gw.create_key()
    with _connect(gw) as sock:
        started = time.monotonic()
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + key.encode()
            + b'\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model": '
        )
        answer = _answer(sock)  # dropped: the app saw the client leave
        assert time.monotonic() - started < 4.0
        assert not answer.startswith(b"HTTP/1.1 5"), answer[:100]
    # The worker is fine and keeps serving.
    assert http("GET", gw.base_url + "/healthz").status == 200


def test_an_idle_connection_flood_cannot_lock_out_healthz(gw: GatewayProcess) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    flood: list[socket.socket] = []
    try:
        with HealthProbe(gw) as probe:
            for _ in range(1000):  # over three times the cap of 300
                with contextlib.suppress(OSError):
                    flood.append(socket.create_connection(("127.0.0.1", gw.port), timeout=5))
            time.sleep(0.5)
        print(f"idle flood: {len(flood)} connections opened, healthz worst {probe.worst * 1000:.0f} ms")
        assert probe.failures == 0 and probe.worst < 0.5
    finally:
        for sock in flood:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
