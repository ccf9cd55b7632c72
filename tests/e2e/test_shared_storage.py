"""Files and sandbox state shared by every replica: real `unigate serve` processes, each with
its own data dir, on one PostgreSQL database and one S3 bucket (moto's S3 server,
tests/support/s3.py). A file stored through replica A (a music upload, image generation and
edit results, a sandbox video) downloads through replica B byte for byte; a sandbox music task
submitted through a replica that then stops completes, polled only by B, in the sandbox's
time. A store that fails is a 503 in the family's shape and a log line without credentials,
and `unigate serve` refuses a bucket it cannot use in one line. The local store (the default)
keeps today's paths in a single process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.support.gateway import GatewayProcess
from tests.support.media_fixtures import make_image
from tests.support.music import MusicClient, make_wav, multipart_body, poll_until_terminal
from tests.support.net import HTTPResult, free_port, http
from tests.support.postgres import fresh_database
from tests.support.s3 import TEST_CREDENTIALS, S3Server, credentials_in_env, s3_server
from tests.support.video import wait_for

pytestmark = [pytest.mark.process, pytest.mark.services]

MUSIC_SECONDS = 3.0


@dataclass
class Pair:
    a: GatewayProcess
    b: GatewayProcess
    key: str
    config: dict[str, Any]
    env: dict[str, str]


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, postgres_url: str, s3: S3Server) -> Iterator[Pair]:
    config = {
        "sandbox": {"enabled": True, "music_seconds": MUSIC_SECONDS, "task_seconds": 1},
        "tasks": {"poll_interval": 0.2, "max_poll_interval": 0.5},
        "storage": s3.storage_config(s3.create_bucket(), prefix="replicas/"),
    }
    env = {"UNIGATE_DATABASE_URL": fresh_database(postgres_url, "t_shared_storage"), **TEST_CREDENTIALS}
    root = tmp_path_factory.mktemp("shared-storage")
    a = GatewayProcess(_folder(root / "a"), config=config, env=env)
    b = GatewayProcess(_folder(root / "b"), config=config, env=env, workers=2)  # a client per worker
    for gw in (a, b):
        gw.start()
    try:
        yield Pair(a, b, a.create_key(name="shared"), config, env)
    finally:
        a.stop()
        b.stop()
    # A clean exit: the S3 client's threads must not abort the interpreter as it finalizes.
    assert b.proc is not None and b.proc.returncode in (0, -15), b.log()[-2000:]  # never -6 (SIGABRT)


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _through(gw: GatewayProcess, url: str, method: str = "GET") -> HTTPResult:
    """A link a replica handed out, requested from `gw` (same path, that replica's address)."""
    return http(method, gw.base_url + urlsplit(url).path)


def _disk_media(gw: GatewayProcess) -> list[str]:
    media = gw.workdir / "data" / "media"
    return sorted(p.name for p in media.iterdir()) if media.is_dir() else []


def test_music_upload_through_a_downloads_through_b(pair: Pair) -> None:
    wav = make_wav(1.0)
    res = MusicClient(pair.a.base_url, pair.key).upload(wav, "take.wav", {"title": "shared"})
    assert res.status == 200, res.body
    task_id = res.json()["data"]["task_id"]
    final = poll_until_terminal(MusicClient(pair.b.base_url, pair.key), [task_id])[task_id]
    assert final["status"] == "SUCCESS", final
    got = _through(pair.b, final["data"][0]["audio_url"])
    assert got.status == 200 and got.body == wav
    assert got.headers["content-type"] == "audio/wav" and got.headers["x-content-type-options"] == "nosniff"
    assert _disk_media(pair.a) == [] and _disk_media(pair.b) == []  # in the bucket, not on a disk


def test_image_generation_and_edit_results_download_through_b(pair: Pair) -> None:
    res = http(
        "POST",
        pair.a.base_url + "/v1/images/generations",
        {"model": "sandbox-image", "prompt": "a lighthouse", "size": "256x256", "response_format": "url"},
        _auth(pair.key),
    )
    assert res.status == 200, res.body
    url = res.json()["data"][0]["url"]
    on_a, on_b = _through(pair.a, url), _through(pair.b, url)
    assert on_b.status == 200 and on_b.body == on_a.body and on_b.body.startswith(b"\x89PNG")
    head = _through(pair.b, url, "HEAD")
    assert head.status == 200 and head.body == b""
    assert int(head.headers["content-length"]) == len(on_a.body)
    assert head.headers["content-type"] == "image/png"

    body, ctype = multipart_body(
        {"image": ("in.png", make_image(128, 96), "image/png")},
        {"model": "sandbox-image", "prompt": "add a moon", "response_format": "url"},
    )
    res = http("POST", pair.a.base_url + "/v1/images/edits", body, {**_auth(pair.key), "Content-Type": ctype})
    assert res.status == 200, res.body
    edited = res.json()["data"][0]["url"]
    assert _through(pair.b, edited).body == _through(pair.a, edited).body
    assert _through(pair.b, edited).body.startswith(b"\x89PNG")


def test_sandbox_video_through_a_downloads_through_b(pair: Pair) -> None:
    res = http(
        "POST",
        pair.a.base_url + "/v1/video/generations",
        {"model": "sandbox-video", "prompt": "a red kite", "duration": 1, "width": 160, "height": 120},
        _auth(pair.key),
    )
    assert res.status == 200, res.body
    task_id = res.json()["task_id"]
    final = wait_for(
        lambda: dict(
            http("GET", pair.b.base_url + f"/v1/video/generations/{task_id}", headers=_auth(pair.key)).json()
        ),
        lambda got: got["status"] in ("completed", "failed"),
    )
    assert final["status"] == "completed", final
    for variant in ("video", "thumbnail", "spritesheet"):
        path = f"/media/tasks/{task_id}/0/{variant}"
        on_a, on_b = http("GET", pair.a.base_url + path), http("GET", pair.b.base_url + path)
        assert on_b.status == 200 and on_b.body == on_a.body, variant
    video = http("GET", pair.b.base_url + f"/media/tasks/{task_id}/0/video")
    assert video.body[4:8] == b"ftyp" and video.headers["content-type"] == "video/mp4"


def test_a_large_file_streams_through_either_replica(pair: Pair, s3: S3Server) -> None:
    from unigate.config import StorageConfig
    from unigate.storage.s3 import S3Storage

    video = b"\x00\x00\x00\x18ftypmp42" + os.urandom(6 * 1024 * 1024)
    with credentials_in_env():
        store = S3Storage(StorageConfig(**pair.config["storage"]))
        asyncio.run(store.put("media/big-0123456789abcdef.mp4", video))
    for gw in (pair.a, pair.b):
        got = http("GET", gw.base_url + "/media/big-0123456789abcdef.mp4")
        assert got.status == 200 and got.body == video
        assert got.headers["content-type"] == "video/mp4" and int(got.headers["content-length"]) == len(video)


def test_music_task_submitted_through_a_stopped_replica_completes_polled_by_b(pair: Pair) -> None:
    # A takes the submit and leaves at once: only B is left to poll the task. (The last test
    # of the pair: A stays stopped.)
    submitted = time.monotonic()
    task = MusicClient(pair.a.base_url, pair.key).submit({"gpt_description_prompt": "a calm piano piece"})
    pair.a.stop()
    client_b = MusicClient(pair.b.base_url, pair.key)
    final = poll_until_terminal(client_b, [task["task_id"]], timeout=MUSIC_SECONDS + 15, interval=0.2)
    took = time.monotonic() - submitted
    done = final[task["task_id"]]
    assert done["status"] == "SUCCESS", done
    # The sandbox's time, plus the poller's interval and a margin for a busy machine.
    assert took < MUSIC_SECONDS + 6, took
    for clip in done["data"]:
        audio = _through(pair.b, clip["audio_url"])
        assert audio.status == 200 and audio.body.startswith(b"RIFF"), clip
        cover = _through(pair.b, clip["image_url"])
        assert cover.status == 200 and cover.body.startswith(b"\x89PNG")
    print(f"\nmusic task via a stopped replica, polled by B: SUCCESS after {took:.1f} s")


def test_store_outage_is_503_without_credentials_and_start_is_refused(tmp_path: Path) -> None:
    with s3_server() as server:
        bucket = server.create_bucket()
        config = {"storage": server.storage_config(bucket), "sandbox": {"enabled": True}}
        gw = GatewayProcess(tmp_path, config=config, env=dict(TEST_CREDENTIALS)).start()
        try:
            key = gw.create_key()
            image = {"model": "sandbox-image", "prompt": "x", "size": "256x256", "response_format": "url"}
            res = http("POST", gw.base_url + "/v1/images/generations", image, _auth(key))
            assert res.status == 200, res.body
            url = res.json()["data"][0]["url"]
            server.stop()
            for method in ("GET", "HEAD"):
                down = _through(gw, url, method)
                assert down.status == 503 and down.headers["retry-after"] == "2", down.status
            down = _through(gw, url)
            assert b"storage_unavailable" in down.body, down.body
            res = http("POST", gw.base_url + "/v1/images/generations", image, _auth(key))
            assert res.status == 503 and res.json()["error"]["code"] == "storage_unavailable"
            refused = _refused(server, tmp_path, bucket)
        finally:
            gw.stop()
    log = gw.log()
    assert "storage: cannot read media/img-" in log and "storage: cannot write" in log
    assert "Traceback" not in log and "unhandled error" not in log
    for secret in TEST_CREDENTIALS.values():
        assert secret not in log and secret not in refused
    assert "connection" in refused.lower() or "refused" in refused.lower(), refused


def _refused(server: S3Server, workdir: Path, bucket: str) -> str:
    """`unigate serve` on a store it cannot use: exit 2 and one `error:` line, returned."""
    path = workdir / "refused.yaml"
    path.write_text(yaml.safe_dump({"storage": server.storage_config(bucket)}))
    env = {**os.environ, **TEST_CREDENTIALS, "UNIGATE_DATA_DIR": str(workdir / "refused")}
    proc = subprocess.run(
        [sys.executable, "-m", "unigate", "serve", "--config", str(path), "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot use the storage bucket s3://{bucket}"), (
        lines
    )
    assert "AWS_ACCESS_KEY_ID" in lines[0]  # the fix is named
    return lines[0]


def test_local_store_single_process_keeps_todays_paths(tmp_path: Path) -> None:
    config = {"sandbox": {"enabled": True, "music_seconds": 1}, "tasks": {"poll_interval": 0.2}}
    with GatewayProcess(tmp_path, config=config) as gw:
        key = gw.create_key()
        music = MusicClient(gw.base_url, key)
        wav = make_wav(0.5)
        res = music.upload(wav, "take.wav")
        assert res.status == 200, res.body
        task = music.submit({"gpt_description_prompt": "a short tune"})
        upload_id = res.json()["data"]["task_id"]
        finals = poll_until_terminal(music, [upload_id, task["task_id"]])
        assert {t["status"] for t in finals.values()} == {"SUCCESS"}
        uploaded = finals[upload_id]["data"][0]["audio_url"]
        assert _through(gw, uploaded).body == wav
        data = tmp_path / "data"
        names = _disk_media(gw)
        assert urlsplit(uploaded).path.rsplit("/", 1)[1] in names
        for variant in ("-0", "-1"):  # the upstream's clip ids: <job id>-<n>
            assert any(n.startswith("sbx_") and n.endswith(f"{variant}.wav") for n in names), names
            assert any(n.endswith(f"{variant}-large.png") for n in names), names
        assert list((data / "sandbox" / "jobs").glob("jobs-*.jsonl"))  # the journal, as before
        big = b"\x00\x00\x00\x18ftypmp42" + os.urandom(3 * 1024 * 1024)  # streamed in chunks
        (data / "media" / "big-0123456789abcdef.mp4").write_bytes(big)
        got = http("GET", gw.base_url + "/media/big-0123456789abcdef.mp4")
        assert got.status == 200 and got.body == big and got.headers["content-type"] == "video/mp4"
