"""`GET /metrics`: every worker's value files merged by prometheus_client's multiprocess
collector into a registry of the scrape's own (never the library's global one), plus what is
read from the database at scrape time (tasks by family and status).

Whichever worker the scrape lands on reports all of them exactly: counters and histograms
are sums over every file in the directory, the files of workers that stopped or died
included; live gauges count only running processes (a dead one's file is dropped here).
prometheus_client is imported on the first scrape, not at start-up.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from unigate.store.aio import AsyncEngine
from unigate.store.schema import tasks

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

log = logging.getLogger("unigate.metrics")

TaskCounts = list[tuple[str, str, int]]  # (family, status, tasks)


async def task_counts(engine: AsyncEngine) -> TaskCounts | None:
    """Tasks per family and status; None when the database does not answer (the rest of
    the scrape is still served)."""
    query = sa.select(tasks.c.family, tasks.c.status, sa.func.count()).group_by(
        tasks.c.family, tasks.c.status
    )
    try:
        async with engine.connect() as conn:
            rows = (await conn.execute(query)).all()
    except Exception as exc:
        log.warning(
            "metrics: tasks by status left out of this scrape, the database failed: %s", type(exc).__name__
        )
        return None
    return [(str(family), str(status), int(count)) for family, status, count in rows]


async def exposition(directory: Path, engine: AsyncEngine) -> tuple[bytes, str]:
    """(body, content type) of a scrape."""
    counts = await task_counts(engine)
    # Reading and merging the files is blocking work, done off the event loop.
    return await asyncio.to_thread(render, directory, counts)


def render(directory: Path, counts: TaskCounts | None) -> tuple[bytes, str]:
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.exposition import CONTENT_TYPE_LATEST
    from prometheus_client.multiprocess import MultiProcessCollector
    from prometheus_client.registry import Collector

    forget_dead_processes(directory)
    registry = CollectorRegistry(auto_describe=False)
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    if counts is not None:
        gauge = GaugeMetricFamily("unigate_tasks", "Tasks in the database.", labels=("family", "status"))
        for family, status, count in counts:
            gauge.add_metric((family, status), count)

        class Tasks(Collector):
            def collect(self) -> Iterator[Metric]:
                yield gauge

        registry.register(Tasks())
    return generate_latest(registry), CONTENT_TYPE_LATEST


def forget_dead_processes(directory: Path) -> None:
    """Remove the live-gauge files of processes that are gone (killed without a clean
    shutdown), so their streams stop counting as active."""
    for path in directory.glob("gauge_live*_*.db"):
        pid = path.stem.rsplit("_", 1)[-1].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process now holds the id
    return True
