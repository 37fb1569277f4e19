"""host states: the one recorded state of each host consolidator acts on, and its changes

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

#: On MariaDB and MySQL: microseconds (DATETIME(6), holding UTC), and tables that compare
#: strings as PostgreSQL and SQLite do (utf8mb4_bin) in InnoDB (transactions, row locks).
TIMESTAMP = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mysql', 'mariadb')
MYSQL: dict[str, Any] = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4', 'mysql_collate': 'utf8mb4_bin'}


def upgrade() -> None:
    """Add host_states ((cloud, host) -> state, since, plan, actor, why) and
    host_state_changes (every change: before, after, when, who, why)."""
    op.create_table(
        'host_states',
        sa.Column('cloud', sa.String(length=255), nullable=False),
        sa.Column('host', sa.String(length=255), nullable=False),
        sa.Column('state', sa.String(length=32), nullable=False),
        sa.Column('since', TIMESTAMP, nullable=False),
        sa.Column('plan_id', sa.String(length=36), nullable=True),
        sa.Column('actor', sa.String(length=32), nullable=False),
        sa.Column('why', sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint('cloud', 'host', name=op.f('pk_host_states')),
        **MYSQL)
    op.create_table(
        'host_state_changes',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('cloud', sa.String(length=255), nullable=False),
        sa.Column('host', sa.String(length=255), nullable=False),
        sa.Column('before', sa.String(length=32), nullable=True),
        sa.Column('after', sa.String(length=32), nullable=False),
        sa.Column('at', TIMESTAMP, nullable=False),
        sa.Column('plan_id', sa.String(length=36), nullable=True),
        sa.Column('actor', sa.String(length=32), nullable=False),
        sa.Column('why', sa.Text(), nullable=True),
        sa.Column('operator', sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_host_state_changes')),
        **MYSQL)
    op.create_index(op.f('ix_host_state_changes_cloud'), 'host_state_changes', ['cloud'],
                    unique=False)


def downgrade() -> None:
    """Drop them again."""
    op.drop_index(op.f('ix_host_state_changes_cloud'), table_name='host_state_changes')
    op.drop_table('host_state_changes')
    op.drop_table('host_states')
