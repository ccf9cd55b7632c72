"""A raw HTTP/1.1 client for hostile requests.

urllib and http.client refuse to send what the bad-input corpus needs (CR/LF in header
values, a Content-Length the body never meets, arbitrary bytes), so requests are written to
the socket as given and the answer is parsed by hand (one request per connection)."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class RawResponse:
    status: int  # 0: the connection closed without an answer
    headers: list[tuple[str, str]]
    body: bytes
    seconds: float

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body)


def build_request(
    method: str,
    path: str,
    body: bytes = b"",
    headers: list[tuple[str, str]] | None = None,
    content_length: int | None = None,
) -> bytes:
    """The request bytes; header values are written as given (CR/LF included)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers or []]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body) if content_length is None else content_length}")
    return "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body


def send_raw(port: int, data: bytes, timeout: float = 30.0) -> RawResponse:
    """Send `data` on a new connection and read the answer until the server closes."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        # The server may answer (413, 400) and stop reading before the whole body is sent.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        raw = _read_all(sock)
    return parse_response(raw, time.monotonic() - started)


def _read_all(sock: socket.socket) -> bytes:
    chunks: list[bytes] = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    return b"".join(chunks)


def parse_response(raw: bytes, seconds: float = 0.0) -> RawResponse:
    if not raw:
        return RawResponse(0, [], b"", seconds)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:])]
    if any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in headers):
        body = _unchunk(body)
    return RawResponse(status, headers, body, seconds)


def _unchunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2 :]
    return bytes(out)
