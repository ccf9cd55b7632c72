"""The poller's timers follow the `tasks` config: the lease it takes on a task lasts
`tasks.lease_seconds`, and while idle it looks for due tasks at least every `poll_interval`
(a task due every 0.2 s was otherwise left waiting up to a second between polls)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tests.unit.test_outage_leases import FlakyStore, QuietProvider, Service
from tests.unit.test_task_store import _store, _task
from unigate.config import TasksConfig
from unigate.tasks.poller import Poller
from unigate.tasks.store import NewTask


def test_a_lease_lasts_the_configured_seconds(tmp_path: Path) -> None:
    async def run() -> None:
        real = await _store(f"sqlite:///{tmp_path / 'store.db'}")
        task = _task(provider="p")
        await real.insert_batch([NewTask(task, [], [])])
        store = FlakyStore(real, "reschedule")  # the write that ends the lease fails: it stays
        config = TasksConfig(lease_seconds=7)
        poller = Poller(Service(store), {"p": QuietProvider()}, config)  # type: ignore[arg-type,dict-item]
        store.down = True
        taken = time.time()
        assert await poller.tick() == 1
        async with real.engine.connect() as conn:
            until = (await conn.execute(sa.text("SELECT lease_until FROM tasks"))).scalar_one()
        assert 6.5 < until - taken < 7.5
        await real.engine.dispose()

    asyncio.run(run())


def test_an_idle_poller_looks_again_within_the_poll_interval() -> None:
    async def run(poll_interval: float) -> list[float]:
        poller = Poller(Service(None), {}, TasksConfig(poll_interval=poll_interval))  # type: ignore[arg-type]

        async def nothing_due() -> int:
            return 0

        poller.tick = nothing_due  # type: ignore[method-assign]
        return [await poller._step() for _ in range(6)]

    assert max(asyncio.run(run(0.2))) <= 0.2
    delays: Any = asyncio.run(run(5.0))
    assert delays[-1] == 1.0, "a long poll interval still backs off to 1 s, no further"
