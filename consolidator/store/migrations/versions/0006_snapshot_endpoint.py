"""snapshot endpoint: where a snapshot was read (Keystone URL and region, or Nova's endpoint)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add snapshots.endpoint: the identity of the cloud a snapshot was read from (NULL for
    scenario files and for snapshots taken before this revision)."""
    with op.batch_alter_table('snapshots') as batch:
        batch.add_column(sa.Column('endpoint', sa.String(length=1024), nullable=True))


def downgrade() -> None:
    """Drop it again."""
    with op.batch_alter_table('snapshots') as batch:
        batch.drop_column('endpoint')
