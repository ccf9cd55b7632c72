"""Alembic environment: runs on the connection handed in by `unigate.store.db.migrate`."""

from __future__ import annotations

from alembic import context

from unigate.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only for manual `alembic` use
    raise RuntimeError("run migrations through unigate (unigate.store.db.migrate)")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
