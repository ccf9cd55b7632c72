"""The Files API's files: one row per file (owner, purpose, name, size, expiry); the bytes are in
the file store under `files/<id>` and count in the owner's `key_storage`.

Revision ID: 0012_files
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_files"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "files",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("purpose", sa.String(40), nullable=False),
        sa.Column("filename", sa.String(1024), nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
    )
    op.create_index("ix_files_owner", "files", ["key_id", "created_at"])
    op.create_index("ix_files_expires", "files", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_files_expires", table_name="files")
    op.drop_index("ix_files_owner", table_name="files")
    op.drop_table("files")
