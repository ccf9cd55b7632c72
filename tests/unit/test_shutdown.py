"""Stopping the gateway while its background loops are busy loses nothing and does not hang:
no loop is cancelled inside a database transaction (that would keep SQLite's write lock)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import sqlalchemy as sa

from unigate.gateway import Gateway
from unigate.settings import Settings
from unigate.store.schema import usage_records
from unigate.usage.recorder import UsageRecord


def test_stop_under_load_flushes_everything_quickly(tmp_path: Path) -> None:
    settings = Settings.from_env({"UNIGATE_DATA_DIR": str(tmp_path), "UNIGATE_ADMIN_KEY": "uga_test"})

    async def run() -> tuple[int, float]:
        gw = Gateway.build(settings)
        await gw.start()
        sent = 0
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:  # keep the flush loop, poller and outbox busy
            for _ in range(400):
                gw.usage.record(UsageRecord("k", "chat", "m", "p", "u", 200, 1, 1, 0.1, 0.0, time.time()))
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
