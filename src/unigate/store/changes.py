"""The change feed: one row in `key_events` per change every gateway process must apply — a key
created, changed or revoked (each process drops its cached copy) or a config reload asked for
(each process re-reads its config file). A key's row is written in the same transaction as the
key itself, so a reader never sees the row before the change.

Readers (cluster/fanout.py) keep the newest `seq` they applied and ask for the rows after it:
one range read on the primary key, which returns nothing almost every time.

A cursor over a sequence is only safe if rows become visible in `seq` order. PostgreSQL hands
out sequence values when rows are inserted, not when they commit, so two concurrent writers
could commit 11 before 10 and a reader that saw 11 would skip 10 forever. Writers therefore
lock the table against each other (never against readers) from their insert to their commit:
the next writer draws its value only after the previous one committed. SQLite has one writer
at a time anyway.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from dataclasses import dataclass

import sqlalchemy as sa

from unigate.store.aio import AsyncConnection, AsyncEngine
from unigate.store.schema import key_events

KEY = "key"
CONFIG = "config"
_PAGE = 500  # rows per read; a burst of bulk key changes is read in several


@dataclass(frozen=True, slots=True)
class Change:
    seq: int
    kind: str  # KEY or CONFIG
    key_id: str  # "" for CONFIG
    key_hash: str  # "" for CONFIG
    origin: str  # the writer's process_origin()


def process_origin(role: str = "worker") -> str:
    """Names this process among every replica's: host, pid, and a few random characters
    (containers can share a hostname and a pid)."""
    host = socket.gethostname()[:60] or "host"
    return f"{role}:{host}:{os.getpid()}:{secrets.token_hex(3)}"


async def append(conn: AsyncConnection, kind: str, origin: str, key_id: str = "", key_hash: str = "") -> int:
    """Append a row in `conn`'s transaction (the caller commits); returns its seq."""
    if conn.dialect.name == "postgresql":
        # EXCLUSIVE blocks other writers of the feed until this transaction ends, and no
        # reader (see the module docstring).
        await conn.execute(sa.text("LOCK TABLE key_events IN EXCLUSIVE MODE"))
    values = {"kind": kind, "origin": origin, "key_id": key_id, "key_hash": key_hash, "at": time.time()}
    result = await conn.execute(key_events.insert().values(**values).returning(key_events.c.seq))
    return int(result.scalar_one())


class ChangeFeed:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def latest(self) -> int:
        """The newest seq: a process starts reading after it (its caches start empty and its
        config was just read)."""
        async with self._engine.connect() as conn:
            value = (await conn.execute(sa.select(sa.func.max(key_events.c.seq)))).scalar()
        return int(value or 0)

    async def since(self, seq: int) -> list[Change]:
        """The rows after `seq`, oldest first, all of them (read a page at a time)."""
        out: list[Change] = []
        columns = (key_events.c.seq, key_events.c.kind, key_events.c.key_id, key_events.c.key_hash)
        query = sa.select(*columns, key_events.c.origin).order_by(key_events.c.seq).limit(_PAGE)
        async with self._engine.connect() as conn:
            while True:
                rows = (await conn.execute(query.where(key_events.c.seq > seq))).all()
                out.extend(Change(r.seq, r.kind, r.key_id, r.key_hash, r.origin) for r in rows)
                if len(rows) < _PAGE:
                    return out
                seq = rows[-1].seq

    async def add(self, kind: str, origin: str) -> int:
        """A row that stands alone (a config reload); returns its seq."""
        async with self._engine.begin() as conn:
            return await append(conn, kind, origin)
