"""Tasks: the client's own id for a task (Kling's `external_task_id`), and room for longer
family and action names of the newer asynchronous families.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("external_id", sa.String(200), nullable=False, server_default=""))
        batch.alter_column("action", type_=sa.String(60), existing_nullable=False)
    op.create_index("ix_tasks_key_family", "tasks", ["key_id", "family", "created_at"])
    op.create_index("ix_tasks_external", "tasks", ["key_id", "external_id"])


def downgrade() -> None:
    op.drop_index("ix_tasks_external", "tasks")
    op.drop_index("ix_tasks_key_family", "tasks")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("external_id")
        batch.alter_column("action", type_=sa.String(20), existing_nullable=False)
