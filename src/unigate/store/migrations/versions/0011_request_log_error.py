"""The request log's `error`: the code and message of the error a request was answered with
("" for a success), so the dashboard's recent requests say why a call failed.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("request_log") as batch:
        batch.add_column(sa.Column("error", sa.String(300), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("request_log") as batch:
        batch.drop_column("error")
