"""Batches the gateway runs, their lines, and the batch a usage record's calls ran for.

Revision ID: 0013_batches
Revises: 0012_files
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_batches"
down_revision = "0012_files"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "batches",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("api", sa.String(12), nullable=False),
        sa.Column("endpoint", sa.String(60), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("input_file_id", sa.String(64), nullable=False, server_default=""),
        sa.Column("output_file_id", sa.String(64), nullable=False, server_default=""),
        sa.Column("error_file_id", sa.String(64), nullable=False, server_default=""),
        sa.Column("metadata", sa.Text, nullable=False, server_default="null"),
        sa.Column("errors", sa.Text, nullable=False, server_default="null"),
        sa.Column("total", sa.Integer, nullable=False, server_default="0"),
        sa.Column("succeeded", sa.Integer, nullable=False, server_default="0"),
        sa.Column("errored", sa.Integer, nullable=False, server_default="0"),
        sa.Column("canceled", sa.Integer, nullable=False, server_default="0"),
        sa.Column("expired", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
        sa.Column("in_progress_at", sa.Float, nullable=True),
        sa.Column("finalizing_at", sa.Float, nullable=True),
        sa.Column("cancelling_at", sa.Float, nullable=True),
        sa.Column("ended_at", sa.Float, nullable=True),
        sa.Column("upstream", sa.Text, nullable=False, server_default=""),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_batches_key", "batches", ["key_id", "created_at"])
    op.create_index("ix_batches_due", "batches", ["status", "lease_until"])
    op.create_table(
        "batch_lines",
        sa.Column("batch_id", sa.String(64), primary_key=True),
        sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("custom_id", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("status_code", sa.Integer, nullable=False, server_default="0"),
        sa.Column("request_id", sa.String(64), nullable=False, server_default=""),
        sa.Column("result", sa.Text, nullable=False, server_default=""),
    )
    with op.batch_alter_table("usage_records") as batch:
        batch.add_column(sa.Column("batch", sa.String(64), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("usage_records") as batch:
        batch.drop_column("batch")
    op.drop_table("batch_lines")
    op.drop_index("ix_batches_due", "batches")
    op.drop_index("ix_batches_key", "batches")
    op.drop_table("batches")
