"""Streaming time to first byte, measured with a blocking raw-socket HTTP/1.1 client (no
client library between the clock and the wire).

Each request is sent on one keep-alive connection; the clock runs from just before `sendall`
to the first `recv` that brings a byte of the *body* (a gateway may send the status line and
headers before it has anything from the upstream, so the first response byte is not enough).
The rest of the response is then read in full and checked: HTTP 200 and the format's final
event (`[DONE]` for OpenAI streams).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

from procs import BenchError

_RECV = 65536


@dataclass(frozen=True)
class Sample:
    ttfb_us: float
    total_us: float


class _Connection:
    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None

    def _open(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _recv(self) -> bytes:
        assert self.sock is not None
        data = self.sock.recv(_RECV)
        if not data:
            raise BenchError(f"127.0.0.1:{self.port} closed the connection mid-response")
        return data

    def exchange(self, raw_request: bytes) -> tuple[Sample, int, bytes]:
        sock = self._open()
        start = time.perf_counter_ns()
        sock.sendall(raw_request)
        buf = b""
        while True:
            buf += self._recv()
            end = buf.find(b"\r\n\r\n")
            if end >= 0 and len(buf) > end + 4:
                first = time.perf_counter_ns()
                break
        head, buf = buf[:end].decode("latin-1"), buf[end + 4 :]
        status_line, *header_lines = head.split("\r\n")
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = self._chunked(buf)
        else:
            length = int(headers.get("content-length", "0"))
            while len(buf) < length:
                buf += self._recv()
            body = buf[:length]
        done = time.perf_counter_ns()
        if headers.get("connection", "").lower() == "close":
            self.close()
        status = int(status_line.split()[1])
        return Sample((first - start) / 1e3, (done - start) / 1e3), status, body

    def _chunked(self, buf: bytes) -> bytes:
        parts: list[bytes] = []
        pos = 0
        while True:
            while (eol := buf.find(b"\r\n", pos)) < 0:
                buf += self._recv()
            size = int(buf[pos:eol].split(b";")[0], 16)
            start = eol + 2
            while len(buf) < start + size + 2:
                buf += self._recv()
            if size == 0:
                return b"".join(parts)
            parts.append(buf[start : start + size])
            pos = start + size + 2


def build_request(port: int, path: str, body: bytes, key: str) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\n"
        "Accept: text/event-stream\r\n"
        f"Authorization: Bearer {key}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def measure_ttfb(
    port: int,
    path: str,
    body: bytes,
    key: str,
    count: int,
    warmup: int,
    last: bytes = b"data: [DONE]",
    window: int = 400,
) -> list[Sample]:
    """`count` sequential streaming requests after `warmup` unrecorded ones; each answer must
    be a 200 whose body contains `last` (the stream's final event) in its last `window` bytes."""
    raw = build_request(port, path, body, key)
    conn = _Connection(port)
    samples: list[Sample] = []
    try:
        for i in range(warmup + count):
            sample, status, data = conn.exchange(raw)
            if status != 200 or last not in data[-window:]:
                raise BenchError(
                    f"streaming request to 127.0.0.1:{port}{path} gave HTTP {status}: {data[:300]!r}"
                )
            if i >= warmup:
                samples.append(sample)
    finally:
        conn.close()
    return samples
