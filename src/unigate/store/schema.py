"""Table definitions shared by the stores and the migrations' autogenerate checks."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("models", sa.Text, nullable=False),  # JSON list of globs; empty = all
    sa.Column("families", sa.Text, nullable=False),  # JSON list; empty = all
    sa.Column("rpm", sa.Integer, nullable=True),
    sa.Column("budget", sa.Float, nullable=True),
    sa.Column("expires_at", sa.Float, nullable=True),
    sa.Column("revoked_at", sa.Float, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("webhook_secret", sa.String(80), nullable=False),
)

# Append-only feed of key changes; every process polls it to evict cached keys.
key_events = sa.Table(
    "key_events",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key_id", sa.String(40), nullable=False),
    sa.Column("key_hash", sa.String(64), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)

usage_records = sa.Table(
    "usage_records",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("request_id", sa.String(40), nullable=False),
    sa.Column("key_id", sa.String(40), nullable=False, index=True),
    sa.Column("endpoint", sa.String(60), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("provider", sa.String(100), nullable=False),
    sa.Column("upstream_model", sa.String(200), nullable=False),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("prompt_tokens", sa.Integer, nullable=False),
    sa.Column("completion_tokens", sa.Integer, nullable=False),
    sa.Column("latency_ms", sa.Float, nullable=False),
    sa.Column("cost", sa.Float, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False, index=True),
)
