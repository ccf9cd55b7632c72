"""The file store's streamed writes and single deletes (what the Files API uses) on both
backends: the data dir and an S3 bucket on moto's server. A large object arrives whole from
many chunks (on S3 a multipart upload); a source that fails leaves no object and its own
exception reaches the caller (a 413 stays a 413); deleting nothing is fine."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.s3 import S3Server, credentials_in_env, s3_server
from unigate.config import StorageConfig
from unigate.errors import PayloadTooLarge
from unigate.storage import LocalStorage, Storage, file_key
from unigate.storage.s3 import S3Storage

MB = 1024 * 1024


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with credentials_in_env(), s3_server() as server:
        yield server


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.services)])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return LocalStorage(tmp_path)
    server: S3Server = request.getfixturevalue("s3")
    return S3Storage(StorageConfig(**server.storage_config(server.create_bucket(), prefix="gw/")))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def _block(i: int) -> bytes:
    return bytes([i % 251]) * (256 * 1024 + i)


async def _blocks(n: int, fail_at: int | None = None) -> AsyncIterator[bytes]:
    for i in range(n):
        if i == fail_at:
            raise PayloadTooLarge("too large")
        yield _block(i)


def test_a_streamed_object_arrives_whole(storage: Storage) -> None:
    async def go() -> None:
        key = file_key("file-" + "a" * 24)
        await storage.put_stream(key, _blocks(48))  # ~12 MiB: several S3 parts
        expected = b"".join(_block(i) for i in range(48))
        opened = await storage.open(key)
        assert opened is not None and opened.size == len(expected)
        got = opened.head + b"".join([chunk async for chunk in opened.rest])
        assert got == expected
        await storage.delete(key)
        assert not await storage.exists(key)
        await storage.delete(key)  # nothing to delete is fine
        await storage.aclose()

    run(go())


def test_a_failing_source_leaves_nothing_and_keeps_its_error(storage: Storage, tmp_path: Path) -> None:
    async def go() -> None:
        key = file_key("file-" + "b" * 24)
        with pytest.raises(PayloadTooLarge):
            await storage.put_stream(key, _blocks(48, fail_at=30))
        assert not await storage.exists(key)
        with pytest.raises(PayloadTooLarge):
            await storage.put_stream(key, _blocks(4, fail_at=0))
        assert not await storage.exists(key)
        await storage.aclose()

    run(go())
    if isinstance(storage, LocalStorage):  # no temporary file left either
        assert [p.name for p in (tmp_path / "files").iterdir()] == []


@pytest.mark.services
def test_the_files_api_on_an_s3_store(s3: S3Server, tmp_path: Path) -> None:
    """Upload, download and delete through the gateway when its file store is a bucket."""
    import openai

    from tests.support.in_process import BASE_URL, InProcessGateway

    config = {"sandbox": {"enabled": True}, "storage": s3.storage_config(s3.create_bucket(), prefix="gw/")}
    data = b"".join(_block(i) for i in range(40))  # ~10 MiB: a multipart upload to the bucket
    with InProcessGateway(tmp_path, config) as gw:
        client = openai.AsyncOpenAI(
            base_url=BASE_URL + "/v1", api_key=gw.create_key(), http_client=gw.client(), max_retries=0
        )
        assert gw.app is not None
        storage = gw.app.gateway.storage

        async def go() -> None:
            made = await client.files.create(file=("big.bin", data), purpose="user_data")
            assert made.bytes == len(data) and await storage.exists(file_key(made.id))
            assert (await client.files.content(made.id)).read() == data
            await client.files.delete(made.id)
            assert not await storage.exists(file_key(made.id))

        gw.run(go())
