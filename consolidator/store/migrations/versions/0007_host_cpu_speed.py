"""host cpu speed

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add snapshot_hosts.cpu_speed (relative CPU speed; NULL, read as 1.0, in rows written
    before it)."""
    with op.batch_alter_table('snapshot_hosts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('cpu_speed', sa.Float(), nullable=True))


def downgrade() -> None:
    """Drop snapshot_hosts.cpu_speed."""
    with op.batch_alter_table('snapshot_hosts', schema=None) as batch_op:
        batch_op.drop_column('cpu_speed')
