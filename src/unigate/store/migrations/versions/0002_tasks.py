"""Asynchronous tasks, their clips, the billing ledger and the webhook outbox.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("family", sa.String(20), nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("provider", sa.String(100), nullable=False),
        sa.Column("upstream_id", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("progress", sa.Integer, nullable=False),
        sa.Column("fail_reason", sa.Text, nullable=False),
        sa.Column("submit_time", sa.Integer, nullable=False),
        sa.Column("start_time", sa.Integer, nullable=False),
        sa.Column("finish_time", sa.Integer, nullable=False),
        sa.Column("notify_hook", sa.Text, nullable=False),
        sa.Column("request", sa.Text, nullable=False),
        sa.Column("result", sa.Text, nullable=False),
        sa.Column("clip_ids", sa.Text, nullable=False),
        sa.Column("public_base", sa.Text, nullable=False),
        sa.Column("price", sa.Float, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("poll_attempts", sa.Integer, nullable=False),
        sa.Column("next_poll_at", sa.Float, nullable=False),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.Float, nullable=False),
        sa.Column("deadline_at", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_tasks_due", "tasks", ["status", "next_poll_at"])
    op.create_index("ix_tasks_key", "tasks", ["key_id"])
    op.create_table(
        "task_clips",
        sa.Column("clip_id", sa.String(40), primary_key=True),
        sa.Column("task_id", sa.String(40), nullable=False),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("provider", sa.String(100), nullable=False),
        sa.Column("upstream_clip_id", sa.String(200), nullable=True),
    )
    op.create_index("ix_task_clips_task_id", "task_clips", ["task_id"])
    op.create_table(
        "billing_ledger",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("task_id", sa.String(40), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("amount", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("task_id", "kind", name="uq_billing_task_kind"),
    )
    op.create_index("ix_billing_ledger_key_id", "billing_ledger", ["key_id"])
    op.create_table(
        "webhook_outbox",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("task_id", sa.String(40), nullable=False),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("state", sa.String(12), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", sa.Float, nullable=False),
        sa.Column("lease_until", sa.Float, nullable=False),
        sa.Column("last_error", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("delivered_at", sa.Float, nullable=True),
    )
    op.create_index("ix_webhook_outbox_task_id", "webhook_outbox", ["task_id"])
    op.create_index("ix_outbox_due", "webhook_outbox", ["state", "next_attempt_at"])


def downgrade() -> None:
    op.drop_table("webhook_outbox")
    op.drop_table("billing_ledger")
    op.drop_table("task_clips")
    op.drop_table("tasks")
