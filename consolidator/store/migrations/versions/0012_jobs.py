"""jobs: work asked through the API, carried out by the daemon that holds the lease

Revision ID: 0012
Revises: 0010
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0010'
branch_labels = None
depends_on = None


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
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('requester', sa.JSON(), nullable=False),
        sa.Column('claimed_by', sa.String(length=255), nullable=True),
        sa.Column('progress', sa.Text(), nullable=True),
        sa.Column('result', sa.JSON(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs')))
    op.create_index(op.f('ix_jobs_cloud'), 'jobs', ['cloud'])
    op.create_index(op.f('ix_jobs_state'), 'jobs', ['state'])


def downgrade() -> None:
    """Drop it again."""
    op.drop_index(op.f('ix_jobs_state'), table_name='jobs')
    op.drop_index(op.f('ix_jobs_cloud'), table_name='jobs')
    op.drop_table('jobs')
