"""The Responses API's stored responses and a background response's stream events.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "responses",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("key_id", sa.String(40), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("provider", sa.String(100), nullable=False),
        sa.Column("native", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("previous_id", sa.String(64), nullable=True),
        sa.Column("background", sa.Boolean, nullable=False),
        sa.Column("request", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("input", sa.Text, nullable=False),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.Float, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_responses_created", "responses", ["created_at"])
    op.create_index("ix_responses_due", "responses", ["status", "lease_until"])
    op.create_table(
        "response_events",
        sa.Column("response_id", sa.String(64), primary_key=True),
        sa.Column("sequence_number", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("data", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("response_events")
    op.drop_index("ix_responses_due", "responses")
    op.drop_index("ix_responses_created", "responses")
    op.drop_table("responses")
