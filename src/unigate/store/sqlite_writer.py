"""Batched inserts for SQLite in one thread hand-off.

Through aiosqlite a transaction of two statements is about ten thread hand-offs (cursor,
execute, close per statement, commit, the pool's rollback), over 1 ms of CPU on this machine;
the same transaction through `sqlite3` in one call on a thread of its own is one. A writer
owns one connection and one thread, so its transactions run one at a time, and the event loop
never waits on SQLite's write lock (another process's writer may hold it: the thread waits,
up to `busy_timeout`). Statements are built with SQLAlchemy Core and compiled once; only
execution bypasses the async adapter, as `sqlite_reader.py` does for reads.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.dml import Insert

_DIALECT = sqlite_dialect.dialect(paramstyle="qmark")

Statement = tuple[str, tuple[str, ...]]  # SQL with `?` placeholders, the parameters' names in order
Rows = Sequence[Mapping[str, Any]]


def compile_insert(stmt: Insert) -> Statement:
    compiled = stmt.compile(dialect=_DIALECT)
    return str(compiled), tuple(compiled.positiontup or ())


class SQLiteWriter:
    def __init__(self, path: str, name: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=30)
        # As the pool's connections (store/db.py): the database is already in WAL mode.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def _write(self, batches: Sequence[tuple[Statement, Rows]]) -> None:
        if self._conn is None:
            self._conn = self._connect()
        conn = self._conn
        # IMMEDIATE: take the write lock first, so the transaction cannot fail half-way for a
        # lock another connection upgraded to meanwhile.
        conn.execute("BEGIN IMMEDIATE")
        try:
            for (sql, names), rows in batches:
                if rows:
                    conn.executemany(sql, [tuple(row[n] for n in names) for row in rows])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    async def write(self, batches: Sequence[tuple[Statement, Rows]]) -> None:
        """Run each statement over its rows, all in one transaction (all or none). Raises what
        the pool would: SQLAlchemy's wrapper of the driver's error (`db.is_outage` reads it)."""
        try:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._write, batches)
        except sqlite3.Error as exc:
            sql = batches[0][0][0] if batches else ""
            raise DBAPIError.instance(sql, None, exc, sqlite3.Error) from exc

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self._close)
        self._thread.shutdown(wait=True)
