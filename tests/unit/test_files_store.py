"""The file service on SQLite and PostgreSQL (migration 0012_files) over the local file store:
files written as streamed, owner-scoped reads, pages in upload order across equal seconds, the
quota counted and given back by delete and the expiry purge, refusals leaving nothing behind,
and the migration's table matching the declared one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from unigate.errors import NotFound, PayloadTooLarge, StorageQuotaExceeded
from unigate.files.expiry import FileExpiry
from unigate.files.service import FileLimits, FileService
from unigate.files.store import FileStore
from unigate.files.table import files
from unigate.storage import LocalStorage
from unigate.store import db, key_storage
from unigate.store.aio import AsyncEngine


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _service(
    engine: AsyncEngine, root: Path, max_bytes: int = 1000, quota: int = 0, days: float = 0
) -> FileService:
    return FileService(FileStore(engine), LocalStorage(root), lambda: FileLimits(max_bytes, quota, days))


def _objects(root: Path) -> list[str]:
    folder = root / "files"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_files_round_trip_owner_scope_pages_and_delete(database_url: str, tmp_path: Path) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        service = _service(engine, tmp_path, days=2)
        made = [
            await service.create("k1", "user_data", f"f{i}.txt", _chunks(b"ab", b"c" * i)) for i in range(4)
        ]
        other = await service.create("k2", "batch", "b.jsonl", _chunks(b"{}\n"))
        assert made[0].expires_at == made[0].created_at + 2 * 86400  # files.retention_days
        assert other.expires_at == other.created_at + 30 * 86400  # batch: OpenAI's 30 days
        assert await service.get("k1", made[1].id) == made[1]
        with pytest.raises(NotFound):
            await service.get("k2", made[1].id)
        assert b"".join([c async for c in service.read(made[3])]) == b"abccc"
        # Four files within one second: pages keep the upload order all the same.
        page = await service.page("k1", purpose=None, after=None, limit=3, newest_first=False)
        assert [f.id for f in page.files] == [f.id for f in made[:3]] and page.has_more
        page = await service.page("k1", purpose=None, after=made[2].id, limit=3, newest_first=False)
        assert [f.id for f in page.files] == [made[3].id] and not page.has_more
        page = await service.page("k1", purpose=None, after=made[2].id, limit=3, newest_first=True)
        assert [f.id for f in page.files] == [made[1].id, made[0].id]
        assert (await service.page("k1", purpose="batch", after=None, limit=9, newest_first=True)).files == []
        assert await key_storage.held(engine, "k1") == sum(f.bytes for f in made)
        with pytest.raises(NotFound):
            await service.delete("k2", made[0].id)
        await service.delete("k1", made[0].id)
        with pytest.raises(NotFound):
            await service.delete("k1", made[0].id)
        assert made[0].id not in _objects(tmp_path) and made[1].id in _objects(tmp_path)
        assert await key_storage.held(engine, "k1") == sum(f.bytes for f in made[1:])
        await engine.dispose()

    asyncio.run(run())


def test_expiry_purge_and_refusals(database_url: str, tmp_path: Path) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        service = _service(engine, tmp_path, max_bytes=10, quota=25)
        now = int(time.time())
        gone = await service.create("k1", "user_data", "old", _chunks(b"12345"), expires_at=now - 5)
        kept = await service.create("k1", "user_data", "new", _chunks(b"12345"), expires_at=now + 3600)
        with pytest.raises(NotFound):
            await service.get("k1", gone.id)
        assert await key_storage.held(engine, "k1") == 10
        assert await service.purge_expired() == 1 and await service.purge_expired() == 0
        assert _objects(tmp_path) == [kept.id] and await key_storage.held(engine, "k1") == 5
        before = _objects(tmp_path)
        with pytest.raises(PayloadTooLarge):
            await service.create("k1", "user_data", "big", _chunks(b"123456", b"78901"))
        await service.create("k1", "user_data", "full", _chunks(b"1234567890"))
        await service.create("k1", "user_data", "full", _chunks(b"1234567890"))
        assert await key_storage.held(engine, "k1") == 25
        before = _objects(tmp_path)
        with pytest.raises(StorageQuotaExceeded):
            await service.create("k1", "user_data", "one more", _chunks(b"1"))
        with pytest.raises(StorageQuotaExceeded):
            await service.precheck("k1")
        await service.precheck("k2")
        # The gateway's own outputs (a batch's results) are neither bound by the upload limit
        # nor refused by the quota, only counted in it: finished work is never thrown away.
        out = await service.create("k1", "batch_output", "out.jsonl", _chunks(b"x" * 20))
        assert out.bytes == 20 and out.expires_at == out.created_at + 30 * 86400
        assert sorted(_objects(tmp_path)) == sorted([*before, out.id])
        assert await key_storage.held(engine, "k1") == 45
        with pytest.raises(StorageQuotaExceeded):
            await service.create("k1", "user_data", "after", _chunks(b"1"))
        await engine.dispose()

    asyncio.run(run())


def test_the_migration_makes_the_declared_table(database_url: str) -> None:
    async def run() -> None:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        async with engine.connect() as conn:

            def describe(sync: sa.Connection) -> tuple[list[str], set[str]]:
                inspector = sa.inspect(sync)
                columns = [c["name"] for c in inspector.get_columns("files")]
                return columns, {str(i["name"]) for i in inspector.get_indexes("files")}

            columns, indexes = await conn.run_sync(describe)
        assert columns == [c.name for c in files.columns]
        assert indexes == {i.name for i in files.indexes}
        await engine.dispose()

    asyncio.run(run())


def test_the_expiry_loop_purges_on_its_own(tmp_path: Path) -> None:
    async def run() -> None:
        engine = db.create_engine(f"sqlite:///{tmp_path / 'store.db'}")
        await db.migrate(engine)
        service = _service(engine, tmp_path)
        expiring = await service.create(
            "k1", "user_data", "soon", _chunks(b"bye"), expires_at=int(time.time()) + 1
        )
        loop = FileExpiry(service, interval=0.1)
        await loop.start()
        try:
            deadline = time.monotonic() + 10
            while expiring.id in _objects(tmp_path) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        finally:
            await loop.stop()
        assert _objects(tmp_path) == [] and await key_storage.held(engine, "k1") == 0
        await engine.dispose()

    asyncio.run(run())
