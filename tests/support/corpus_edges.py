"""The corpus's attacks below the JSON level: header injection attempts (CR/LF where a client
controls a header value, or a value that could be echoed into a response header) and bodies
that never end."""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass

from tests.support.corpus_model import BOUNDARY, FORM_CT
from tests.support.media_fixtures import encode_tone
from tests.support.raw_http import RawResponse, parse_response

INJECTED = "x-injected"


@dataclass(frozen=True)
class Injection:
    name: str
    method: str
    path: str
    head_lines: tuple[bytes, ...]  # raw header lines, written as given
    body: bytes = b""
    content_type: str = ""


def _upload_with_filename(disposition: str) -> bytes:
    wav = encode_tone(0.3, "wav")
    return (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; {disposition}\r\n'
            "Content-Type: audio/wav\r\n\r\n"
        ).encode()
        + wav
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


INJECTIONS = [
    Injection("x_request_id_crlf", "GET", "/v1/models", (b"X-Request-Id: abc\r\nX-Injected: 1",)),
    Injection("x_request_id_bare_lf", "GET", "/v1/models", (b"X-Request-Id: abc\nX-Injected: 1",)),
    Injection("x_request_id_bare_cr", "GET", "/v1/models", (b"X-Request-Id: abc\rX-Injected: 1",)),
    Injection("x_request_id_obs_fold", "GET", "/v1/models", (b"X-Request-Id: abc\r\n X-Injected: 1",)),
    Injection("x_request_id_nul", "GET", "/v1/models", (b"X-Request-Id: a\x00b",)),
    Injection("fish_model_header_crlf", "POST", "/fish/v1/tts", (b"model: s1\r\nX-Injected: 1",),
              b'{"text": "hello"}', "application/json"),
    Injection("fish_model_header_encoded_crlf", "POST", "/fish/v1/tts", (b"model: s1%0D%0AX-Injected:%201",),
              b'{"text": "hello"}', "application/json"),
    Injection("path_encoded_crlf", "GET", "/v1/videos/a%0D%0AX-Injected:%201", ()),
    Injection("query_encoded_crlf", "GET", "/v1/videos/x/content?variant=a%0D%0AX-Injected:%201", ()),
    Injection("host_crlf_encoded", "POST", "/suno/submit/lyrics", (b"Host: a%0d%0aX-Injected:1",),
              b'{"prompt": "a song"}', "application/json"),
    Injection("upload_filename_star_crlf", "POST", "/suno/upload/audio", (),
              _upload_with_filename("filename*=UTF-8''a%0D%0AX-Injected%3A%201.wav"), FORM_CT),
    Injection("upload_filename_quoted_crlf", "POST", "/suno/upload/audio", (),
              _upload_with_filename('filename="a\\r\\nX-Injected: 1.wav"'), FORM_CT),
]  # fmt: skip


def injection_request(case: Injection, key: str) -> bytes:
    lines = [f"{case.method} {case.path} HTTP/1.1".encode()]
    if not any(line.lower().startswith(b"host:") for line in case.head_lines):
        lines.append(b"Host: 127.0.0.1")
    lines += [b"Connection: close", f"Authorization: Bearer {key}".encode(), *case.head_lines]
    if case.content_type:
        lines.append(f"Content-Type: {case.content_type}".encode())
    if case.body or case.method == "POST":
        lines.append(f"Content-Length: {len(case.body)}".encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + case.body


def injected_headers(res: RawResponse) -> list[tuple[str, str]]:
    """Response headers that carry what a client tried to inject."""
    return [
        (k, v)
        for k, v in res.headers
        if k.lower() == INJECTED or "\r" in v or "\n" in v or "injected" in v.lower()
    ]


# Endpoints whose body the handler reads in each of the ways the gateway has: a JSON body,
# a multipart form as it arrives, a urlencoded form, the admin API.
NEVER_ENDING = [
    ("/v1/chat/completions", "application/json"),
    ("/v1/messages", "application/json"),
    ("/v1/audio/transcriptions", FORM_CT),
    ("/suno/upload/audio", FORM_CT),
    ("/api/tasks/visual/segmentation", "application/x-www-form-urlencoded"),
    ("/admin/keys", "application/json"),
]


def never_ending(port: int, path: str, ctype: str, key: str, timeout: float) -> tuple[float, int]:
    """Send a head promising 1 MB and 100 bytes of it, then nothing: (seconds until the server
    closed the connection, the status it answered or 0 for none)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: {ctype}\r\nContent-Length: 1000000\r\n\r\n"
    ).encode()
    first = f"--{BOUNDARY}\r\n".encode() if ctype == FORM_CT else b'{"model": "sandbox-chat", "x": "'
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head + first.ljust(100, b"a"))
        chunks: list[bytes] = []
        with contextlib.suppress(ConnectionResetError, TimeoutError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        seconds = time.monotonic() - started
    return seconds, parse_response(b"".join(chunks)).status
