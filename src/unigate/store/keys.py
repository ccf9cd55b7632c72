"""API key persistence. All SQL is parameterised through SQLAlchemy Core."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson

from unigate.auth import keys as keyfmt
from unigate.auth.principal import Principal
from unigate.store import changes as feed
from unigate.store.aio import AsyncEngine
from unigate.store.changes import process_origin
from unigate.store.schema import api_keys

PERIODS = ("daily", "monthly", "total")  # of a key's budget

# Matches no model and no family: a list that cannot be read allows nothing (fail closed).
UNREADABLE = ("\x00unreadable",)


def _names(text: Any) -> tuple[str, ...]:
    """A stored JSON list of strings; one edited into something else denies everything
    instead of breaking every listing and lookup of keys."""
    try:
        value = orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return UNREADABLE
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return UNREADABLE
    return tuple(value)


def _row_to_principal(row: Any) -> Principal:
    return Principal(
        key_id=row.id,
        name=row.name,
        key_hash=row.key_hash,
        prefix=row.prefix,
        models=_names(row.models),
        families=_names(row.families),
        rpm=row.rpm,
        tpm=row.tpm,
        budget=row.budget,
        budget_period=row.budget_period if row.budget_period in PERIODS else "total",
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        created_at=row.created_at,
        webhook_secret=row.webhook_secret,
    )


Announce = Callable[[int], Awaitable[None]]  # told the change feed's new seq after a commit


class KeyStore:
    """Every change to a key also appends to the change feed (store/changes.py) in the same
    transaction, and is then announced (cluster/fanout.py publishes it to every replica)."""

    def __init__(
        self, engine: AsyncEngine, origin: str | None = None, announce: Announce | None = None
    ) -> None:
        self._engine = engine
        self._origin = origin or process_origin()
        self._announce = announce

    async def _announced(self, seq: int | None) -> None:
        if seq is not None and self._announce is not None:
            await self._announce(seq)

    async def create(
        self,
        name: str,
        models: Sequence[str] = (),
        families: Sequence[str] = (),
        rpm: int | None = None,
        budget: float | None = None,
        expires_at: float | None = None,
        tpm: int | None = None,
        budget_period: str = "total",
    ) -> tuple[str, Principal]:
        """Insert a new key; returns the plain key (shown once) and its record."""
        plain = keyfmt.generate_key()
        values = {
            "id": keyfmt.new_key_id(),
            "name": name,
            "key_hash": keyfmt.hash_key(plain),
            "prefix": keyfmt.display_prefix(plain),
            "models": orjson.dumps(list(models)).decode(),
            "families": orjson.dumps(list(families)).decode(),
            "rpm": rpm,
            "tpm": tpm,
            "budget": budget,
            "budget_period": budget_period,
            "expires_at": expires_at,
            "revoked_at": None,
            "created_at": time.time(),
            "webhook_secret": keyfmt.new_webhook_secret(),
        }
        key_id, key_hash = str(values["id"]), str(values["key_hash"])
        async with self._engine.begin() as conn:
            await conn.execute(api_keys.insert().values(**values))
            # Announced too: a process that remembered this hash as unknown forgets it.
            seq = await feed.append(conn, feed.KEY, self._origin, key_id, key_hash)
        await self._announced(seq)
        return plain, _row_to_principal(_Obj(values))

    async def by_hash(self, key_hash: str) -> Principal | None:
        async with self._engine.connect() as conn:
            row = (await conn.execute(api_keys.select().where(api_keys.c.key_hash == key_hash))).first()
        return _row_to_principal(row) if row else None

    async def get(self, key_id: str) -> Principal | None:
        async with self._engine.connect() as conn:
            row = (await conn.execute(api_keys.select().where(api_keys.c.id == key_id))).first()
        return _row_to_principal(row) if row else None

    async def list_all(self) -> list[Principal]:
        async with self._engine.connect() as conn:
            rows = (await conn.execute(api_keys.select().order_by(api_keys.c.created_at))).all()
        return [_row_to_principal(r) for r in rows]

    async def revoke(self, key_id: str) -> Principal | None:
        """Mark revoked and append to the change feed in one transaction."""
        now = time.time()
        seq = None
        async with self._engine.begin() as conn:
            row = (await conn.execute(api_keys.select().where(api_keys.c.id == key_id))).first()
            if row is None:
                return None
            if row.revoked_at is None:
                await conn.execute(api_keys.update().where(api_keys.c.id == key_id).values(revoked_at=now))
                seq = await feed.append(conn, feed.KEY, self._origin, key_id, row.key_hash)
        await self._announced(seq)
        return await self.get(key_id)

    async def update(self, key_id: str, changes: dict[str, Any]) -> Principal | None:
        """Change a key's permissions, limits, budget or expiry, and append to the change
        feed in the same transaction, so every process's cache drops the old record."""
        values = dict(changes)
        for name in ("models", "families"):
            if name in values:
                values[name] = orjson.dumps(list(values[name])).decode()
        seq = None
        async with self._engine.begin() as conn:
            row = (await conn.execute(api_keys.select().where(api_keys.c.id == key_id))).first()
            if row is None:
                return None
            if values:
                await conn.execute(api_keys.update().where(api_keys.c.id == key_id).values(**values))
                seq = await feed.append(conn, feed.KEY, self._origin, key_id, row.key_hash)
        await self._announced(seq)
        return await self.get(key_id)


class _Obj:
    """Attribute view over a dict so freshly inserted values share the row converter."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)
