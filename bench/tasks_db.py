"""The music task benchmark's look at the database file (`tasks.py`): read-only, from
outside the gateway, on a connection of its own."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any


def _db_query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def task_rows(db: Path) -> int:
    return int(_db_query(db, "SELECT count(*) FROM tasks")[0][0])


def settled_task_rows(db: Path, quiet: float = 0.3, limit: float = 5.0) -> int:
    """The row count once it stops moving (submits in flight when wrk stopped may still commit)."""
    deadline = time.monotonic() + limit
    last = task_rows(db)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = task_rows(db)
        if now == last:
            return now
        last = now
    return last


def task_ids(db: Path, count: int) -> list[str]:
    return [str(r[0]) for r in _db_query(db, f"SELECT id FROM tasks ORDER BY random() LIMIT {int(count)}")]


def polled_tasks(db: Path) -> int:
    """Tasks the poller has touched (leased, polled or moved on): 0 if it stayed idle."""
    sql = "SELECT count(*) FROM tasks WHERE poll_attempts > 0 OR version > 0 OR lease_owner IS NOT NULL"
    return int(_db_query(db, sql)[0][0])


def journal_mode(db: Path) -> str:
    return str(_db_query(db, "PRAGMA journal_mode")[0][0]).lower()
