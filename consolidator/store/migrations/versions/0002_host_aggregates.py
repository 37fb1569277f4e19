"""host aggregates

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add snapshot_hosts.aggregates (names, JSON; NULL in rows written before it)."""
    with op.batch_alter_table('snapshot_hosts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('aggregates', sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop snapshot_hosts.aggregates."""
    with op.batch_alter_table('snapshot_hosts', schema=None) as batch_op:
        batch_op.drop_column('aggregates')
