"""Keys: a tokens-per-minute limit and the period of the money budget (daily, monthly or
total; `total` is what a budget meant before).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("tpm", sa.Integer, nullable=True))
        batch.add_column(sa.Column("budget_period", sa.String(10), nullable=False, server_default="total"))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("budget_period")
        batch.drop_column("tpm")
