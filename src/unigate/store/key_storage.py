"""How many bytes of stored state each key holds, and the per-key quota on it.

Stored responses (with a background run's events) and files (files/) count against their key.
The count lives in `key_storage`, changed in the same transaction that stores or deletes the
state, so the quota check before a call is one point read and never drifts from what is
stored. The check is made before the call (what the call is about to store is estimated from
its request), like a budget: a call that fits is not cut off later, so a key can exceed its
quota by at most one call's output. An upload is checked as its bytes arrive instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from unigate.errors import StorageQuotaExceeded
from unigate.store.aio import AsyncConnection, AsyncEngine
from unigate.store.db import upsert_insert
from unigate.store.schema import key_storage
from unigate.store.sqlite_reader import SQLiteReader, compile_select

QUOTA_KEY = "limits.stored_bytes_per_key"


def _add(insert: Callable[..., Any]) -> Any:
    stmt = insert(key_storage)
    return stmt.on_conflict_do_update(
        index_elements=["key_id"], set_={"bytes": key_storage.c.bytes + stmt.excluded.bytes}
    )


def sqlite_add() -> sqlite.Insert:
    """The statement `add` runs on SQLite, rows `{"key_id", "bytes"}`."""
    stmt: sqlite.Insert = _add(sqlite.insert)
    return stmt


async def add(conn: AsyncConnection, deltas: Mapping[str, int]) -> None:
    """Add (or, negative, remove) bytes to keys' counts, inside the caller's transaction."""
    rows = [{"key_id": key, "bytes": n} for key, n in deltas.items() if n]
    if not rows:
        return
    await conn.execute(_add(upsert_insert(conn.dialect.name)), rows)


async def held(engine: AsyncEngine, key_id: str) -> int:
    async with engine.connect() as conn:
        found = await conn.scalar(sa.select(key_storage.c.bytes).where(key_storage.c.key_id == key_id))
    return int(found or 0)


_HELD = compile_select(sa.select(key_storage.c.bytes).where(key_storage.c.key_id == sa.bindparam("k")))


class StorageQuota:
    """`limit` bytes per key (0: no quota). `reader`: SQLite's on-loop point reader, if any
    (`sqlite_reader.py`): the check is on every stored call, and through the pool a point read
    costs several thread hand-offs."""

    def __init__(
        self, engine: AsyncEngine, limit: int, reader: Callable[[], SQLiteReader | None] = lambda: None
    ) -> None:
        self.engine = engine
        self.limit = limit
        self._reader = reader

    async def _held(self, key_id: str) -> int:
        reader = self._reader()
        if reader is None:
            return await held(self.engine, key_id)
        row = reader.one(_HELD, (key_id,))
        return int(row[0] or 0) if row is not None else 0

    async def check(self, key_id: str, adding: int) -> None:
        """Refuse a call that would store `adding` bytes more than the key may hold."""
        if not self.limit:
            return
        if adding > self.limit:
            raise StorageQuotaExceeded(
                f"This request would store {adding} bytes, more than the {self.limit} bytes of stored "
                f"state an API key may hold ({QUOTA_KEY}). Send it with `store: false`.",
                status=413,
            )
        used = await self._held(key_id)
        if used + adding > self.limit:
            raise StorageQuotaExceeded(
                f"This API key holds {used} bytes of stored state; its quota is {self.limit} bytes "
                f"({QUOTA_KEY}). Delete stored responses, or send `store: false`."
            )
