"""A task cancelled in the middle of a write must not leave SQLite's write lock behind.

The sequence a graceful stop met (a background response's state written while the stop
cancelled its task): the UPDATE ... RETURNING waits for another writer's lock, the task is
cancelled, SQLAlchemy closes the connection instead of pooling it, the statement then gets the
lock and runs, and the close comes after it. SQLite cannot close a connection whose statement
is not reset, and kept it, with the write lock, until its cursor was collected: every other
writer of the database waited out `busy_timeout` and failed with "database is locked"."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import time
from pathlib import Path

import sqlalchemy as sa

from unigate.store import db

_TABLE = sa.Table(
    "t", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True), sa.Column("v", sa.Integer)
)


def _other_writer_succeeds(path: Path) -> bool:
    other = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        other.execute("UPDATE t SET v = v + 10 WHERE id = 1")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        other.close()


def test_a_write_cancelled_while_it_waits_for_the_lock_leaves_no_lock(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
    setup.execute("INSERT INTO t VALUES (1, 0)")

    async def run() -> bool:
        engine = db.create_engine(f"sqlite:///{path}")
        returned: list[object] = []

        async def write() -> None:
            async with engine.begin() as conn:
                result = await conn.execute(
                    _TABLE.update().where(_TABLE.c.id == 1).values(v=_TABLE.c.v + 1).returning(_TABLE.c.v)
                )
                returned.append(result.scalar())

        setup.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        task = asyncio.create_task(write())
        await asyncio.sleep(0.2)  # the UPDATE waits in SQLite's busy handler
        task.cancel()
        await asyncio.sleep(0.1)  # the cancel closes the connection: queued behind the UPDATE
        setup.execute("COMMIT")  # the UPDATE gets the lock and runs, then the close
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0.2)
        gc.disable()  # a cycle may hold the cursor: nothing may depend on collecting it
        try:
            started = time.monotonic()
            ok = await asyncio.to_thread(_other_writer_succeeds, path)
            assert time.monotonic() - started < 1.5
        finally:
            gc.enable()
        assert not returned  # the cancelled write did not complete
        await engine.dispose()
        return ok

    try:
        assert asyncio.run(run()), "a cancelled write left the database locked"
    finally:
        setup.close()
    check = sqlite3.connect(path)
    assert check.execute("SELECT v FROM t").fetchone() == (10,)  # the cancelled write rolled back
    check.close()
