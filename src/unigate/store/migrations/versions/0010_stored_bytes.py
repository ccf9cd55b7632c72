"""Stored-state accounting: each response's own size and the size of the conversation it
ends (bytes and tokens), and each key's stored bytes (`key_storage`), which the per-key
storage quota and the conversation bounds read without loading any response.

Rows stored before this revision get their sizes from their text columns (characters, close
enough to bytes for a quota); their conversation sizes stay 0.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("responses") as batch:
        batch.add_column(sa.Column("size_bytes", sa.BigInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("context_bytes", sa.BigInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("context_tokens", sa.BigInteger, nullable=False, server_default="0"))
    op.create_table(
        "key_storage",
        sa.Column("key_id", sa.String(40), primary_key=True),
        sa.Column("bytes", sa.BigInteger, nullable=False),
    )
    op.execute(
        "UPDATE responses SET size_bytes = length(body) + length(input) + length(request) + "
        "COALESCE((SELECT SUM(length(data)) FROM response_events e WHERE e.response_id = responses.id), 0)"
    )
    op.execute(
        "INSERT INTO key_storage (key_id, bytes) "
        "SELECT key_id, SUM(size_bytes) FROM responses GROUP BY key_id"
    )


def downgrade() -> None:
    op.drop_table("key_storage")
    with op.batch_alter_table("responses") as batch:
        batch.drop_column("context_tokens")
        batch.drop_column("context_bytes")
        batch.drop_column("size_bytes")
