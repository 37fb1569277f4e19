"""resource classes and traits

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the extra resource classes and traits of hosts, and instances' allocations (JSON;
    NULL in rows written before it)."""
    with op.batch_alter_table('snapshot_hosts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('resources', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('traits', sa.JSON(), nullable=True))
    with op.batch_alter_table('snapshot_instances', schema=None) as batch_op:
        batch_op.add_column(sa.Column('resources', sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop them again."""
    with op.batch_alter_table('snapshot_instances', schema=None) as batch_op:
        batch_op.drop_column('resources')
    with op.batch_alter_table('snapshot_hosts', schema=None) as batch_op:
        batch_op.drop_column('traits')
        batch_op.drop_column('resources')
