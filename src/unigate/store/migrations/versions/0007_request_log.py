"""The request log (one row per recent request, for the dashboard) and an index for the
admin task list, newest first.

Revision ID: 0007
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "request_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("request_id", sa.String(40), nullable=False),
        sa.Column("method", sa.String(10), nullable=False),
        sa.Column("path", sa.String(300), nullable=False),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("latency_ms", sa.Float, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("route", sa.String(300), nullable=False),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("outcome", sa.Integer, nullable=True),
    )
    op.create_index("ix_request_log_created_at", "request_log", ["created_at"])
    op.create_index("ix_request_log_key", "request_log", ["key_id", "created_at"])
    op.create_index("ix_tasks_created", "tasks", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_tasks_created", "tasks")
    op.drop_table("request_log")
