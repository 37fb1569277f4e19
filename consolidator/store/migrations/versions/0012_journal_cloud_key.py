"""the cloud's identity on each journal row, which every clouds.yaml name of it shares

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Give each journal row the identity of its cloud (its Keystone URL and region; NULL in
    rows written before it, which are found by their cloud's name)."""
    with op.batch_alter_table('journal', schema=None) as batch_op:
        batch_op.add_column(sa.Column('cloud_key', sa.String(length=255), nullable=True))
        batch_op.create_index(batch_op.f('ix_journal_cloud_key'), ['cloud_key'], unique=False)


def downgrade() -> None:
    """Drop it again."""
    with op.batch_alter_table('journal', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_journal_cloud_key'))
        batch_op.drop_column('cloud_key')
