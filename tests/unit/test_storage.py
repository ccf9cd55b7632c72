"""The file store's two backends against the same expectations: the data dir's disk and an
S3 bucket on a real S3-compatible server (moto's, tests/support/s3.py). Round trips, streaming
reads that never hold a large object whole, head-only opens, prefix deletes, key guards; for
S3 also the start-up check, failures mapped to `StorageUnavailable` with a short reason that
carries no credential, and the sandbox's job records kept in the bucket."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import config_yaml
from tests.support.s3 import TEST_CREDENTIALS, S3Server, credentials_in_env, s3_server
from unigate.config import ConfigError, GatewayConfig, StorageConfig
from unigate.config_source import load_config
from unigate.edge.media_types import SNIFF_BYTES
from unigate.errors import StorageUnavailable
from unigate.storage import LocalStorage, Storage, build_storage, media_key
from unigate.storage.base import CHUNK, check_key
from unigate.storage.s3 import S3Storage
from unigate_sandbox.journal import JobJournal, StoredJournal, journal_for


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with credentials_in_env(), s3_server() as server:  # the client reads the standard variables
        yield server


def _s3_storage(server: S3Server, **extra: Any) -> S3Storage:
    return S3Storage(StorageConfig(**server.storage_config(server.create_bucket(), **extra)))


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.services)])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return LocalStorage(tmp_path)
    return _s3_storage(request.getfixturevalue("s3"), prefix="gw/")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_put_read_exists_and_overwrite(storage: Storage) -> None:
    async def go() -> None:
        key = media_key("img-0123.png")
        assert await storage.read(key) is None and not await storage.exists(key)
        assert await storage.open(key) is None and await storage.open(key, head_only=True) is None
        await storage.put(key, b"first")
        await storage.put(key, b"second")
        assert await storage.read(key) == b"second" and await storage.exists(key)
        await storage.put(media_key("empty.txt"), b"")
        empty = await storage.open(media_key("empty.txt"), head_only=True)
        assert empty is not None and empty.size == 0 and empty.head == b""

    run(go())


def test_open_streams_a_large_object_in_chunks(storage: Storage) -> None:
    data = os.urandom(16 * CHUNK + 12345)  # ~4 MB

    async def go() -> None:
        await storage.put(media_key("big.mp4"), data)
        found = await storage.open(media_key("big.mp4"))
        assert found is not None and found.size == len(data)
        assert len(found.head) >= SNIFF_BYTES and data.startswith(found.head)
        chunks = [chunk async for chunk in found.rest]
        assert found.head + b"".join(chunks) == data
        # Streamed: pieces of about CHUNK (S3: what arrived, at least CHUNK), never the whole.
        assert len(chunks) >= 4 and max(len(c) for c in [found.head, *chunks]) <= 4 * CHUNK
        head = await storage.open(media_key("big.mp4"), head_only=True)
        assert head is not None and head.size == len(data)
        assert head.head == data[: len(head.head)] and SNIFF_BYTES <= len(head.head) < len(data)
        assert [c async for c in head.rest] == []
        # A reader that stops early (the client left) releases the object.
        early = await storage.open(media_key("big.mp4"))
        assert early is not None
        await early.close()

    run(go())


def test_delete_prefix_removes_one_jobs_files_only(storage: Storage) -> None:
    names = ["sbt_a.mp4", "sbt_a-thumb.webp", "sbt_a-sprite.jpg", "sbt_b.mp4", "img-x.png"]

    async def go() -> None:
        for name in names:
            await storage.put(media_key(name), name.encode())
        await storage.delete_prefix(media_key("sbt_a"))
        left = [n for n in names if await storage.exists(media_key(n))]
        assert left == ["sbt_b.mp4", "img-x.png"]
        await storage.delete_prefix(media_key("nothing-here"))  # nothing to delete is fine

    run(go())


@pytest.mark.parametrize("key", ["", "/etc/passwd", "media/../admin_key", "media//x", "media/./x", "media/"])
def test_keys_are_relative_paths_only(key: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        check_key(key)
    with pytest.raises(ValueError):
        run(LocalStorage(tmp_path).put(key, b"x"))


def test_local_store_keeps_todays_paths(tmp_path: Path) -> None:
    store = LocalStorage(tmp_path)
    run(store.put(media_key("sbx_1-0.wav"), b"RIFF"))
    run(store.put("sandbox/inputs/sbt_1-image", b"png"))
    assert (tmp_path / "media" / "sbx_1-0.wav").read_bytes() == b"RIFF"
    assert (tmp_path / "sandbox" / "inputs" / "sbt_1-image").read_bytes() == b"png"
    # No temporary file is left beside them.
    assert sorted(p.name for p in (tmp_path / "media").iterdir()) == ["sbx_1-0.wav"]
    assert not store.shared and build_storage(StorageConfig(), tmp_path).describe() == store.describe()


def test_local_write_failure_is_storage_unavailable(tmp_path: Path) -> None:
    (tmp_path / "media").write_text("a file where the folder should be")
    with pytest.raises(StorageUnavailable):
        run(LocalStorage(tmp_path).put(media_key("x.png"), b"x"))


@pytest.mark.services
def test_s3_objects_live_under_the_prefix(s3: S3Server) -> None:
    bucket = s3.create_bucket()
    config = StorageConfig(**s3.storage_config(bucket, prefix="team-a/"))
    run(S3Storage(config).put(media_key("clip.wav"), b"RIFF"))
    unprefixed = S3Storage(StorageConfig(**s3.storage_config(bucket)))
    assert run(unprefixed.read("team-a/media/clip.wav")) == b"RIFF"
    assert run(unprefixed.read(media_key("clip.wav"))) is None
    assert S3Storage(config).describe() == f"s3://{bucket}/team-a at {s3.endpoint}"


def test_s3_addressing_follows_path_style() -> None:
    virtual = S3Storage(
        StorageConfig(backend="s3", bucket="media-b", endpoint_url="https://minio.local:9000")
    )
    assert virtual.store.config["endpoint"] == "https://media-b.minio.local:9000"  # bucket in the host
    endpoint = "http://minio.local:9000/"
    path = S3Storage(StorageConfig(backend="s3", bucket="media-b", endpoint_url=endpoint, path_style=True))
    assert path.store.config["endpoint"] == "http://minio.local:9000"
    assert path.store.config["virtual_hosted_style_request"] in (False, "false")
    aws = S3Storage(StorageConfig(backend="s3", bucket="media-b", region="eu-west-1", prefix="p/"))
    assert "endpoint" not in aws.store.config and aws.store.prefix == "p"


@pytest.mark.services
def test_s3_check_passes_and_refuses_a_missing_bucket(s3: S3Server) -> None:
    run(_s3_storage(s3).check())
    missing = S3Storage(StorageConfig(**s3.storage_config("no-such-bucket-here")))
    with pytest.raises(StorageUnavailable) as caught:
        run(missing.check())
    assert "NoSuchBucket" in caught.value.detail


@pytest.mark.services
def test_s3_unreachable_is_storage_unavailable_fast_and_without_secrets(
    s3: S3Server, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.support.net import free_port

    config = StorageConfig(
        backend="s3", bucket="anything", endpoint_url=f"http://127.0.0.1:{free_port()}", path_style=True
    )
    store = S3Storage(config)
    caplog.set_level(logging.WARNING, "unigate.storage")
    for call in (store.read(media_key("a.png")), store.put(media_key("a.png"), b"x"), store.check()):
        loop = asyncio.new_event_loop()
        started = loop.time()
        with pytest.raises(StorageUnavailable) as caught:
            loop.run_until_complete(call)
        assert loop.time() - started < 10
        loop.close()
        assert caught.value.status == 503 and caught.value.code == "storage_unavailable"
        assert caught.value.detail and "\n" not in caught.value.detail
    text = caplog.text + str(caught.value.detail)
    for secret in TEST_CREDENTIALS.values():
        assert secret not in text
    assert "cannot read media/a.png" in caplog.text  # a short name is shown whole


@pytest.mark.services
def test_stored_journal_shares_records_between_processes(s3: S3Server, tmp_path: Path) -> None:
    store = _s3_storage(s3)
    writer, reader = journal_for(store, tmp_path, "jobs"), journal_for(store, tmp_path, "jobs")
    assert isinstance(writer, StoredJournal) and isinstance(reader, StoredJournal)
    record = {"action": "MUSIC", "created": 1.5, "fields": {"prompt": "x"}, "clips": ["c-0"]}
    run(writer.append("sbx_1", record))
    assert run(reader.get("sbx_1")) == {"id": "sbx_1", **record}
    assert run(reader.get("sbx_unknown")) is None
    assert run(store.read("sandbox/jobs/sbx_1.json")) is not None
    # The local store keeps the data dir's journal files, as before.
    local = journal_for(LocalStorage(tmp_path), tmp_path, "tasks")
    assert isinstance(local, JobJournal) and local.directory == tmp_path / "sandbox" / "tasks"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"backend": "s3"}, "storage: bucket: backend s3 needs the bucket's name"),
        ({"backend": "local", "bucket": "media"}, "storage: bucket: only for backend s3"),
        ({"backend": "s3", "bucket": "ok-bucket", "endpoint_url": "minio:9000"}, "is not an http(s)://"),
        ({"backend": "s3", "bucket": "ok-bucket", "prefix": "/abs"}, "prefix: a relative folder"),
        ({"backend": "gcs"}, "storage.backend"),
        ({"backend": "s3", "bucket": "ok-bucket", "secret_access_key": "x"}, "unknown key"),
    ],
)
def test_config_section_is_checked(section: dict[str, Any], message: str, tmp_path: Path) -> None:

    path = tmp_path / "gateway.yaml"
    path.write_text(config_yaml.dump({"storage": section}))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert message in str(caught.value)
    assert GatewayConfig().storage.backend == "local"
