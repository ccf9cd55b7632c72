"""The `files` table (migration 0012_files), declared on the shared metadata so the stores and
the migration checks see it with the others."""

from __future__ import annotations

import sqlalchemy as sa

from unigate.store.schema import metadata

# One row per stored file; the bytes themselves are in the file store under `files/<id>`.
files = sa.Table(
    "files",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),  # file-…
    sa.Column("key_id", sa.String(40), nullable=False),  # owner
    sa.Column("purpose", sa.String(40), nullable=False),
    sa.Column("filename", sa.String(1024), nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),  # exact, so a page keeps upload order
    sa.Column("expires_at", sa.BigInteger, nullable=True),  # unix seconds; NULL: kept until deleted
    sa.Column("status", sa.String(20), nullable=False),
    sa.Index("ix_files_owner", "key_id", "created_at"),  # listing a key's files
    sa.Index("ix_files_expires", "expires_at"),  # the expiry purge
)
