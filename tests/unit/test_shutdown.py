"""Stopping the gateway while its background loops are busy loses nothing and does not hang:
no loop is cancelled inside a database transaction (that would keep SQLite's write lock)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from unigate.edge.access_log import finished
from unigate.edge.asgi import Request
from unigate.gateway import Gateway
from unigate.settings import Settings
from unigate.store import db
from unigate.store.aio import AsyncEngine
from unigate.store.schema import usage_records
from unigate.usage.recorder import UsageRecord, UsageRecorder
from unigate.usage.request_log import RequestLog


def test_stop_under_load_flushes_everything_quickly(tmp_path: Path) -> None:
    settings = Settings.from_env({"UNIGATE_DATA_DIR": str(tmp_path), "UNIGATE_ADMIN_KEY": "uga_test"})

    async def run() -> tuple[int, float]:
        gw = Gateway.build(settings)
        await gw.start()
        sent = 0
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:  # keep the flush loop, poller and outbox busy
            for _ in range(400):
                gw.usage.record(*UsageRecord("k", "chat", "m", "p", "u", 200, 1, 1, 0.1, 0.0, time.time()))
                sent += 1
            await asyncio.sleep(0.02)
        started = time.monotonic()
        await gw.stop()
        took = time.monotonic() - started
        check = Gateway.build(settings)
        async with check.engine.connect() as conn:
            stored = (await conn.execute(sa.select(sa.func.sum(usage_records.c.requests)))).scalar_one()
        await check.engine.dispose()
        assert stored == sent
        return stored, took

    stored, took = asyncio.run(run())
    assert stored > 10_000 and took < 5.0


async def _cancel_while_blocked(path: Path, flush: Awaitable[int], meanwhile: Callable[[], None]) -> None:
    """Start `flush` while another writer holds SQLite's write lock, cancel it as a shutdown past
    its grace cancels the flushing loop, run `meanwhile`, then let the database go."""
    other = sqlite3.connect(path)
    other.execute("BEGIN IMMEDIATE")
    flushing = asyncio.ensure_future(flush)
    await asyncio.sleep(0.1)  # the write has taken its rows and waits for the lock
    assert not flushing.done()
    flushing.cancel()
    await asyncio.sleep(0.05)
    meanwhile()
    other.rollback()
    other.close()
    with pytest.raises(asyncio.CancelledError):
        await flushing


def test_a_cancelled_usage_flush_still_writes_its_rows_once(tmp_path: Path) -> None:
    """The cancelled flush had taken the buckets out of memory: its requests were neither
    written nor put back, and their usage (and spend) was lost."""

    async def run() -> list[tuple[str, int]]:
        engine = db.create_engine(f"sqlite:///{tmp_path / 'usage.db'}")
        await db.migrate(engine)
        recorder = UsageRecorder(engine, interval=60.0)
        for _ in range(10):
            recorder.record(*_usage("key-a"))

        def meanwhile() -> None:
            assert recorder.pending == 10, "the cancelled flush's write is in progress: pending"
            recorder.record(*_usage("key-b"))  # arrives while it is

        await _cancel_while_blocked(tmp_path / "usage.db", recorder.flush(), meanwhile)
        await recorder.stop()  # the final flush: after the cancelled one's write, then the rest
        assert recorder.pending == 0
        rows = await _all(engine, "SELECT key_id, requests FROM usage_records ORDER BY key_id")
        await engine.dispose()
        return [(str(r[0]), int(r[1])) for r in rows]

    assert asyncio.run(run()) == [("key-a", 10), ("key-b", 1)], "every request once, none twice"


def test_a_cancelled_request_log_flush_still_writes_its_rows_once(tmp_path: Path) -> None:
    async def run() -> list[str]:
        engine = db.create_engine(f"sqlite:///{tmp_path / 'log.db'}")
        await db.migrate(engine)
        log = RequestLog(engine, interval=60.0)
        for i in range(5):
            log.add(finished(_request(f"req-{i}"), 200, time.perf_counter(), time.perf_counter(), None))
        await _cancel_while_blocked(
            tmp_path / "log.db",
            log.flush(),
            lambda: log.add(
                finished(_request("req-late"), 200, time.perf_counter(), time.perf_counter(), None)
            ),
        )
        await log.stop()
        rows = await _all(engine, "SELECT request_id FROM request_log")
        await engine.dispose()
        return sorted(str(r[0]) for r in rows)

    assert asyncio.run(run()) == [*(f"req-{i}" for i in range(5)), "req-late"]


def _usage(key: str) -> UsageRecord:
    return UsageRecord(key, "chat", "m", "p", "m", 200, 10, 5, 20.0, 0.5, time.time())


def _request(request_id: str) -> Request:
    scope = {"method": "POST", "path": "/v1/chat/completions", "headers": []}
    return Request(scope, _nothing, _nothing, request_id)


async def _nothing(*_: Any) -> Any:
    return None


async def _all(engine: AsyncEngine, sql: str) -> list[Any]:
    async with engine.connect() as conn:
        return list((await conn.execute(sa.text(sql))).all())
