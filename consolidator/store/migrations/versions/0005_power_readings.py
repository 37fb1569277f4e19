"""power readings: each host's draw read from its BMC when a snapshot was taken

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

#: On MariaDB and MySQL: a table that compares strings as PostgreSQL and SQLite do
#: (utf8mb4_bin), in InnoDB (transactions, row locks).
MYSQL: dict[str, Any] = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4', 'mysql_collate': 'utf8mb4_bin'}


def upgrade() -> None:
    """Add snapshot_power: (snapshot, host) -> watts, the host's load then, the driver."""
    op.create_table(
        'snapshot_power',
        sa.Column('snapshot_id', sa.String(length=36), nullable=False),
        sa.Column('host', sa.String(length=255), nullable=False),
        sa.Column('watts', sa.Float(), nullable=False),
        sa.Column('load', sa.Float(), nullable=False),
        sa.Column('source', sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(['snapshot_id'], ['snapshots.id'],
                                name=op.f('fk_snapshot_power_snapshot_id_snapshots'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('snapshot_id', 'host', name=op.f('pk_snapshot_power')),
        **MYSQL)


def downgrade() -> None:
    """Drop it again."""
    op.drop_table('snapshot_power')
