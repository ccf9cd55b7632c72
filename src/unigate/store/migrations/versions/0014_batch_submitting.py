"""A batch's `submitting_at`: when a relay to a vendor's batch API began submitting it, written
before the submit, so a worker taking the batch over looks the vendor's batch up (by the
gateway's batch id in its metadata) before submitting it again.

Revision ID: 0014_batch_submitting
Revises: 0013_batches
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_batch_submitting"
down_revision = "0013_batches"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("batches") as batch:
        batch.add_column(sa.Column("submitting_at", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("batches") as batch:
        batch.drop_column("submitting_at")
