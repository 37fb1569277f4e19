"""who ran each journal row's action: the operator, user@host

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Give each journal row the operator (user@host) whose command wrote it (NULL in rows
    written before it)."""
    with op.batch_alter_table('journal', schema=None) as batch_op:
        batch_op.add_column(sa.Column('operator', sa.String(length=255), nullable=True))


def downgrade() -> None:
    """Drop it again."""
    with op.batch_alter_table('journal', schema=None) as batch_op:
        batch_op.drop_column('operator')
