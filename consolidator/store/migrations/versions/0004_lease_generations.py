"""lease generations, and the lease a journal row was written under

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Give each lease a generation (1 for leases taken before it) and each journal row the
    holder and generation it was written under (NULL in rows written before it)."""
    with op.batch_alter_table('leases', schema=None) as batch_op:
        batch_op.add_column(sa.Column('generation', sa.Integer(), nullable=False,
                                      server_default='1'))
    with op.batch_alter_table('journal', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lease_holder', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('lease_generation', sa.Integer(), nullable=True))


def downgrade() -> None:
    """Drop them again."""
    with op.batch_alter_table('journal', schema=None) as batch_op:
        batch_op.drop_column('lease_generation')
        batch_op.drop_column('lease_holder')
    with op.batch_alter_table('leases', schema=None) as batch_op:
        batch_op.drop_column('generation')
