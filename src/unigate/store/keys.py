"""API key persistence. All SQL is parameterised through SQLAlchemy Core."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from unigate.auth import keys as keyfmt
from unigate.auth.principal import Principal
from unigate.store.schema import api_keys, key_events

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


class KeyStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

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
        async with self._engine.begin() as conn:
            await conn.execute(api_keys.insert().values(**values))
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
        async with self._engine.begin() as conn:
            row = (await conn.execute(api_keys.select().where(api_keys.c.id == key_id))).first()
            if row is None:
                return None
            if row.revoked_at is None:
                await conn.execute(api_keys.update().where(api_keys.c.id == key_id).values(revoked_at=now))
                await conn.execute(key_events.insert().values(key_id=key_id, key_hash=row.key_hash, at=now))
        return await self.get(key_id)

    async def update(self, key_id: str, changes: dict[str, Any]) -> Principal | None:
        """Change a key's permissions, limits, budget or expiry, and append to the change
        feed in the same transaction, so every process's cache drops the old record."""
        values = dict(changes)
        for name in ("models", "families"):
            if name in values:
                values[name] = orjson.dumps(list(values[name])).decode()
        now = time.time()
        async with self._engine.begin() as conn:
            row = (await conn.execute(api_keys.select().where(api_keys.c.id == key_id))).first()
            if row is None:
                return None
            if values:
                await conn.execute(api_keys.update().where(api_keys.c.id == key_id).values(**values))
                await conn.execute(key_events.insert().values(key_id=key_id, key_hash=row.key_hash, at=now))
        return await self.get(key_id)

    async def changes_since(self, seq: int) -> tuple[int, list[str]]:
        """Key hashes changed after `seq`, and the newest seq seen."""
        async with self._engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.select(key_events.c.seq, key_events.c.key_hash)
                    .where(key_events.c.seq > seq)
                    .order_by(key_events.c.seq)
                )
            ).all()
        if not rows:
            return seq, []
        return rows[-1].seq, [r.key_hash for r in rows]

    async def latest_change(self) -> int:
        async with self._engine.connect() as conn:
            value = (await conn.execute(sa.select(sa.func.max(key_events.c.seq)))).scalar()
        return int(value or 0)


class _Obj:
    """Attribute view over a dict so freshly inserted values share the row converter."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)
