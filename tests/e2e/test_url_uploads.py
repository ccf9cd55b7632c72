"""`{"url": …}` audio uploads against the real server: the whole file is fetched (it arrives in
many network reads from a server that writes it in pieces), stored byte for byte, and served
back equal to the source; a file past `limits.max_audio_upload` is a 413; a body cut short of
its Content-Length is a 400, never a silently shorter file."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.music import MusicClient, make_wav, poll_until_terminal
from tests.support.net import http
from tests.support.served import ServedGateway

MAX_UPLOAD = 3 * 1024 * 1024
CONFIG: dict[str, Any] = {
    "providers": [{"name": "sandbox", "protocol": "sandbox"}],
    "models": [{"name": "chirp-v4", "routes": [{"provider": "sandbox"}]}],
    "limits": {"max_audio_upload": MAX_UPLOAD},
    "sandbox": {"music_seconds": 1},
    "tasks": {"poll_interval": 0.3},
}
BIG_WAV = make_wav(seconds=118.0, rate=8000, freq=250.0)  # ~1.9 MB
PIECE = 16 * 1024


@pytest.fixture(scope="module")
def source() -> Iterator[str]:
    """Serves `/big.wav` in 16 KiB writes with pauses (so it arrives in many reads),
    `/huge.wav` past the limit, and `/cut.wav` whose body stops short of its length."""
    too_big = BIG_WAV + b"\0" * (MAX_UPLOAD + 1 - len(BIG_WAV))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/big.wav":
                self._send(BIG_WAV, len(BIG_WAV))
            elif self.path == "/huge.wav":
                # No Content-Length: the limit must hold while reading, not only on the header.
                self._send(too_big, None)
            elif self.path == "/cut.wav":
                self._send(BIG_WAV[: 300 * 1024], len(BIG_WAV))
            else:
                self.send_error(404)

        def _send(self, data: bytes, length: int | None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            if length is not None:
                self.send_header("Content-Length", str(length))
            else:
                self.send_header("Connection", "close")
            self.end_headers()
            for at in range(0, len(data), PIECE):
                try:
                    self.wfile.write(data[at : at + PIECE])
                    self.wfile.flush()
                except OSError:
                    return  # the gateway stopped reading (413)
                if at % (8 * PIECE) == 0:
                    time.sleep(0.005)
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}  # the source is on loopback
    with ServedGateway(tmp_path_factory.mktemp("url-uploads"), config=CONFIG, env=env) as gateway:
        yield gateway


def test_a_big_url_upload_is_stored_whole(gw: ServedGateway, source: str) -> None:
    assert len(BIG_WAV) > 1024 * 1024
    client = MusicClient(gw.base_url, gw.create_key())
    res = client.post("/suno/upload/audio", {"url": source + "/big.wav"})
    assert res.status == 200, res.body
    task_id = res.json()["data"]["task_id"]
    task = poll_until_terminal(client, [task_id])[task_id]
    assert task["status"] == "SUCCESS", task
    stored = http("GET", task["data"][0]["audio_url"])
    assert stored.status == 200
    assert len(stored.body) == len(BIG_WAV) and stored.body == BIG_WAV
    files = list((gw.workdir / "data" / "media").glob("*.wav"))
    assert any(f.stat().st_size == len(BIG_WAV) and f.read_bytes() == BIG_WAV for f in files)


def test_past_the_limit_is_413(gw: ServedGateway, source: str) -> None:
    client = MusicClient(gw.base_url, gw.create_key())
    res = client.post("/suno/upload/audio", {"url": source + "/huge.wav"})
    assert res.status == 413, res.body
    assert res.json()["data"] is None


def test_a_body_cut_short_fails_clearly(gw: ServedGateway, source: str) -> None:
    client = MusicClient(gw.base_url, gw.create_key())
    res = client.post("/suno/upload/audio", {"url": source + "/cut.wav"})
    assert res.status == 400, res.body
    assert res.json()["code"] == "url_fetch_failed"
