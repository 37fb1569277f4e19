"""jobs: work asked through the API, carried out by the daemon that holds the lease

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

#: MariaDB and MySQL: DATETIME(6) holding UTC, InnoDB, names compared byte for byte (as 0009)
TIMESTAMP = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mysql', 'mariadb')
MYSQL: dict[str, Any] = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4', 'mysql_collate': 'utf8mb4_bin'}


def upgrade() -> None:
    """Add the jobs table: one row per request the API recorded for the daemon."""
    op.create_table(
        'jobs',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('cloud', sa.String(length=255), nullable=False),
        sa.Column('kind', sa.String(length=32), nullable=False),
        sa.Column('target', sa.String(length=255), nullable=False),
        sa.Column('params', sa.JSON(), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('created_at', TIMESTAMP, nullable=False),
        sa.Column('updated_at', TIMESTAMP, nullable=False),
        sa.Column('started_at', TIMESTAMP, nullable=True),
        sa.Column('finished_at', TIMESTAMP, nullable=True),
        sa.Column('requester', sa.JSON(), nullable=False),
        sa.Column('claimed_by', sa.String(length=255), nullable=True),
        sa.Column('progress', sa.Text(), nullable=True),
        sa.Column('result', sa.JSON(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs')), **MYSQL)
    op.create_index(op.f('ix_jobs_cloud'), 'jobs', ['cloud'])
    op.create_index(op.f('ix_jobs_state'), 'jobs', ['state'])


def downgrade() -> None:
    """Drop it again."""
    op.drop_index(op.f('ix_jobs_state'), table_name='jobs')
    op.drop_index(op.f('ix_jobs_cloud'), table_name='jobs')
    op.drop_table('jobs')
