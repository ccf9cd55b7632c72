"""The change feed (`key_events`) carries config reloads too: a row's kind (`key` or
`config`) and the worker that wrote it, so that a worker skips the reloads it asked for itself.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("key_events") as batch:
        batch.add_column(sa.Column("kind", sa.String(10), nullable=False, server_default="key"))
        batch.add_column(sa.Column("origin", sa.String(120), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("key_events") as batch:
        batch.drop_column("origin")
        batch.drop_column("kind")
