"""Idempotency-Key of task submits: one row per (API key, Idempotency-Key), written in the
same transaction as the task it created.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("task_id", sa.String(40), nullable=True),
        sa.Column("claim", sa.String(32), nullable=False),
        sa.Column("lease_until", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("key_id", "idempotency_key", name="uq_idempotency_key"),
    )
    op.create_index("ix_idempotency_created", "idempotency_keys", ["created_at"])
    op.create_index("ix_idempotency_task", "idempotency_keys", ["task_id"])


def downgrade() -> None:
    op.drop_index("ix_idempotency_task", "idempotency_keys")
    op.drop_index("ix_idempotency_created", "idempotency_keys")
    op.drop_table("idempotency_keys")
