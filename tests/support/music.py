"""Helpers for the music family's end-to-end tests: a small client for `/suno/*`, the exact
field sets and types of the task record (spec §2.1 to §2.3), test audio, and a local file
server for upload-by-URL."""

from __future__ import annotations

import datetime as dt
import io
import math
import struct
import threading
import time
import uuid
import wave
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.net import HTTPResult, http

TERMINAL = ("SUCCESS", "FAILURE")
URL_FIELDS = ("audio_url", "video_url", "image_url", "image_large_url")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Spec §2.1: every field of the music task, with its JSON type.
TASK_FIELDS: dict[str, type | tuple[type, ...]] = {
    "task_id": str,
    "notify_hook": str,
    "action": str,
    "status": str,
    "fail_reason": str,
    "submit_time": int,
    "start_time": int,
    "finish_time": int,
    "progress": str,
    "search_item": str,
    "data": (list, dict),
    "audio_url": str,
    "video_url": str,
    "image_url": str,
    "image_large_url": str,
    "major_model_version": str,
    "model_name": str,
    "prompt": str,
    "type": str,
    "tags": str,
    "duration": int,
    "error_type": str,
    "error_message": str,
    "handle": str,
    "is_handle_updated": bool,
    "is_trashed": bool,
    "reaction": type(None),
    "created_at": str,
    "title": str,
}

# Spec §2.2: every field of a clip.
CLIP_FIELDS: dict[str, type] = {
    "id": str,
    "title": str,
    "audio_url": str,
    "video_url": str,
    "image_url": str,
    "image_large_url": str,
    "major_model_version": str,
    "model_name": str,
    "status": str,
    "created_at": str,
    "handle": str,
    "display_name": str,
    "avatar_image_url": str,
    "user_id": str,
    "entity_type": str,
    "is_public": bool,
    "is_trashed": bool,
    "is_liked": bool,
    "is_handle_updated": bool,
    "is_contest_clip": bool,
    "allow_comments": bool,
    "has_hook": bool,
    "play_count": int,
    "upvote_count": int,
    "flag_count": int,
    "metadata": dict,
}

# Spec §2.3: every field of a clip's metadata.
METADATA_FIELDS: dict[str, type] = {
    "can_remix": bool,
    "edited_clip_id": str,
    "history": list,
    "infill": bool,
    "is_remix": bool,
    "priority": int,
    "prompt": str,
    "stream": bool,
    "tags": str,
    "task": str,
    "type": str,
}
# Extra metadata the gateway adds (description-mode inputs, result duration, clip error).
METADATA_EXTRAS = {"gpt_description_prompt", "make_instrumental", "duration", "error_type", "error_message"}

HISTORY_FIELDS: dict[str, type] = {
    "continue_at": int,
    "id": str,
    "infill": bool,
    "source": str,
    "type": str,
}


def _check_type(where: str, value: Any, expected: type | tuple[type, ...]) -> None:
    # bool is a subclass of int: an int field must not be a bool, and the reverse.
    expected_types = expected if isinstance(expected, tuple) else (expected,)
    if bool not in expected_types:
        assert not isinstance(value, bool), f"{where} is a bool, expected {expected}: {value!r}"
    assert isinstance(value, expected), f"{where} has type {type(value).__name__}, expected {expected}"


def assert_fields(
    where: str, obj: Any, fields: dict[str, Any], extras: set[str] | frozenset[str] = frozenset()
):
    assert isinstance(obj, dict), f"{where} is not an object: {obj!r}"
    missing = set(fields) - set(obj)
    unexpected = set(obj) - set(fields) - set(extras)
    assert not missing, f"{where} lacks {sorted(missing)}"
    assert not unexpected, f"{where} has unexpected keys {sorted(unexpected)}"
    for name, expected in fields.items():
        _check_type(f"{where}.{name}", obj[name], expected)


def assert_music_task_shape(task: dict[str, Any], *, metadata_extras: bool = True) -> None:
    """Every field of §2.1 (and §2.2/§2.3 for each clip) with the right JSON type."""
    assert_fields("task", task, TASK_FIELDS)
    # Spec §2.1: submit_time and start_time are ten-digit numbers.
    for name in ("submit_time", "start_time"):
        assert 10**9 <= task[name] < 10**10, f"{name} is not a ten-digit timestamp: {task[name]}"
    assert isinstance(task["data"], list), "a music task's data is a list of clips"
    for i, clip in enumerate(task["data"]):
        assert_fields(f"clip[{i}]", clip, CLIP_FIELDS)
        # Spec §2.2 types avatar_image_url as "string, uri".
        assert clip["avatar_image_url"].startswith(("http://", "https://")), clip["avatar_image_url"]
        extras = METADATA_EXTRAS if metadata_extras else set()
        assert_fields(f"clip[{i}].metadata", clip["metadata"], METADATA_FIELDS, extras)
        for j, item in enumerate(clip["metadata"]["history"]):
            assert_fields(f"clip[{i}].metadata.history[{j}]", item, HISTORY_FIELDS)


def assert_error_envelope(res: HTTPResult, status: int, code: str | None = None) -> dict[str, Any]:
    """`{"code": <error code>, "message": <text>, "data": null}` with `status`."""
    assert res.status == status, f"expected {status}, got {res.status}: {res.body[:500]!r}"
    assert res.headers.get("content-type", "").startswith("application/json")
    body = res.json()
    assert isinstance(body, dict) and set(body) == {"code", "message", "data"}, body
    assert body["data"] is None
    assert isinstance(body["code"], str) and body["code"] and body["code"] != "success", body
    assert isinstance(body["message"], str) and body["message"], body
    if code is not None:
        assert body["code"] == code, body
    return body


def parse_iso_utc(value: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(value)
    assert parsed.tzinfo is not None, f"{value!r} has no timezone"
    assert parsed.utcoffset() == dt.timedelta(0), f"{value!r} is not UTC"
    return parsed


def is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def progress_value(task: dict[str, Any]) -> int:
    text = task["progress"]
    assert isinstance(text, str) and text.endswith("%"), text
    return int(text[:-1])


@dataclass
class MusicClient:
    base_url: str
    key: str | None

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    def post(
        self,
        path: str,
        body: bytes | dict[str, Any] | list[Any] | None,
        headers: dict[str, str] | None = None,
    ) -> HTTPResult:
        hdrs = {**self.headers, **(headers or {})}
        if isinstance(body, bytes):
            hdrs.setdefault("Content-Type", "application/json")
        return http("POST", self.base_url + path, body, hdrs)

    def get(self, path: str) -> HTTPResult:
        return http("GET", self.base_url + path, None, self.headers)

    def submit(self, body: dict[str, Any], path: str = "/suno/submit/music") -> dict[str, Any]:
        """Submit and return the task (`data`), asserting the success envelope."""
        res = self.post(path, body)
        assert res.status == 200, f"{path} gave {res.status}: {res.body[:500]!r}"
        envelope = res.json()
        assert set(envelope) == {"code", "message", "data"}, envelope
        assert envelope["code"] == "success" and envelope["message"] == "", envelope
        return dict(envelope["data"])

    def upload(
        self, data: bytes, filename: str = "take.wav", fields: dict[str, str] | None = None
    ) -> HTTPResult:
        body, content_type = multipart_body({"file": (filename, data, "audio/wav")}, fields or {})
        return self.post("/suno/upload/audio", body, {"Content-Type": content_type})

    def fetch(self, task_id: str) -> dict[str, Any]:
        res = self.get(f"/suno/fetch/{task_id}")
        assert res.status == 200, f"fetch {task_id} gave {res.status}: {res.body[:500]!r}"
        envelope = res.json()
        assert envelope["code"] == "success" and envelope["message"] == "", envelope
        return dict(envelope["data"])


def poll_until_terminal(
    client: MusicClient,
    task_ids: list[str],
    timeout: float = 20.0,
    interval: float = 0.3,
    on_snapshot: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Fetch each task every `interval` until all are SUCCESS/FAILURE; the final records."""
    pending = set(task_ids)
    final: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    while pending:
        for task_id in sorted(pending):
            task = client.fetch(task_id)
            if on_snapshot:
                on_snapshot(task_id, task)
            if task["status"] in TERMINAL:
                final[task_id] = task
                pending.discard(task_id)
        if not pending:
            break
        assert time.monotonic() < deadline, f"tasks not finished within {timeout}s: {sorted(pending)}"
        time.sleep(interval)
    return final


def make_wav(seconds: float = 2.0, rate: int = 8000, freq: float = 440.0) -> bytes:
    """A mono 16-bit sine WAV built with the `wave` module."""
    frames = int(seconds * rate)
    samples = b"".join(
        struct.pack("<h", int(12000 * math.sin(2 * math.pi * freq * i / rate))) for i in range(frames)
    )
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples)
    return out.getvalue()


def make_float_wav(seconds: float = 2.0, rate: int = 8000, freq: float = 440.0) -> bytes:
    """A mono 32-bit IEEE-float WAV (format tag 3), as DAWs commonly export; the `wave`
    module of Python 3.11 cannot read it, but it is valid WAV audio."""
    frames = int(seconds * rate)
    samples = b"".join(
        struct.pack("<f", 0.4 * math.sin(2 * math.pi * freq * i / rate)) for i in range(frames)
    )
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)
    chunks = b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks


def wav_seconds(data: bytes) -> float:
    with wave.open(io.BytesIO(data), "rb") as w:
        assert w.getnframes() > 0
        return w.getnframes() / w.getframerate()


def multipart_body(
    files: dict[str, tuple[str, bytes, str]], fields: dict[str, str] | None = None
) -> tuple[bytes, str]:
    boundary = "----unigate" + uuid.uuid4().hex
    parts: list[bytes] = []
    for name, value in (fields or {}).items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    for name, (filename, data, content_type) in files.items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: {content_type}\r\n\r\n"
        )
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


@dataclass
class FileServer:
    base_url: str
    files: dict[str, bytes]
    requests: list[tuple[str, str]]


@contextmanager
def file_server(files: dict[str, bytes]) -> Iterator[FileServer]:
    """A loopback HTTP server answering GET for `files` (by path) and 204 to any POST."""
    requests: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(("GET", self.path))
            data = files.get(self.path)
            if data is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            requests.append(("POST", self.path))
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FileServer(f"http://127.0.0.1:{server.server_address[1]}", files, requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
