"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None

#: On MariaDB and MySQL: microseconds (DATETIME(6), holding UTC), and tables that compare
#: strings as PostgreSQL and SQLite do (utf8mb4_bin) in InnoDB (transactions, row locks).
TIMESTAMP = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mysql', 'mariadb')
MYSQL: dict[str, Any] = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4', 'mysql_collate': 'utf8mb4_bin'}


def upgrade() -> None:

    op.create_table('leases',
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('holder', sa.String(length=255), nullable=False),
    sa.Column('acquired_at', TIMESTAMP, nullable=False),
    sa.Column('expires_at', TIMESTAMP, nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_leases')),
    **MYSQL)
    op.create_table('snapshots',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('cloud', sa.String(length=255), nullable=False),
    sa.Column('taken_at', TIMESTAMP, nullable=False),
    sa.Column('source', sa.String(length=1024), nullable=False),
    sa.Column('capacity_source', sa.String(length=32), nullable=False),
    sa.Column('host_count', sa.Integer(), nullable=False),
    sa.Column('instance_count', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_snapshots')),
    **MYSQL)
    with op.batch_alter_table('snapshots', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_snapshots_cloud'), ['cloud'], unique=False)
        batch_op.create_index(batch_op.f('ix_snapshots_taken_at'), ['taken_at'], unique=False)

    op.create_table('plans',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('cloud', sa.String(length=255), nullable=False),
    sa.Column('snapshot_id', sa.String(length=36), nullable=False),
    sa.Column('algorithm', sa.String(length=64), nullable=False),
    sa.Column('ranking', sa.String(length=64), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', TIMESTAMP, nullable=False),
    sa.Column('updated_at', TIMESTAMP, nullable=False),
    sa.Column('hosts_before', sa.Integer(), nullable=False),
    sa.Column('hosts_after', sa.Integer(), nullable=False),
    sa.Column('lower_bound', sa.Integer(), nullable=False),
    sa.Column('migrations_lower_bound', sa.Integer(), nullable=False),
    sa.Column('spare', sa.Integer(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['snapshot_id'], ['snapshots.id'], name=op.f('fk_plans_snapshot_id_snapshots')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_plans')),
    **MYSQL)
    with op.batch_alter_table('plans', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_plans_cloud'), ['cloud'], unique=False)
        batch_op.create_index(batch_op.f('ix_plans_status'), ['status'], unique=False)

    op.create_table('snapshot_hosts',
    sa.Column('snapshot_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('host_id', sa.String(length=255), nullable=False),
    sa.Column('compute_host', sa.String(length=255), nullable=False),
    sa.Column('vcpus', sa.Integer(), nullable=False),
    sa.Column('memory_mb', sa.Integer(), nullable=False),
    sa.Column('disk_gb', sa.Integer(), nullable=False),
    sa.Column('cpu_allocation_ratio', sa.Float(), nullable=False),
    sa.Column('ram_allocation_ratio', sa.Float(), nullable=False),
    sa.Column('disk_allocation_ratio', sa.Float(), nullable=False),
    sa.Column('reserved_vcpus', sa.Integer(), nullable=False),
    sa.Column('reserved_memory_mb', sa.Integer(), nullable=False),
    sa.Column('reserved_disk_gb', sa.Integer(), nullable=False),
    sa.Column('availability_zone', sa.String(length=255), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('power', sa.String(length=16), nullable=False),
    sa.Column('disabled_reason', sa.Text(), nullable=True),
    sa.Column('bmc', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['snapshot_id'], ['snapshots.id'], name=op.f('fk_snapshot_hosts_snapshot_id_snapshots'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('snapshot_id', 'name', name=op.f('pk_snapshot_hosts')),
    **MYSQL)
    op.create_table('snapshot_instances',
    sa.Column('snapshot_id', sa.String(length=36), nullable=False),
    sa.Column('instance_id', sa.String(length=255), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('vcpus', sa.Integer(), nullable=False),
    sa.Column('memory_mb', sa.Integer(), nullable=False),
    sa.Column('disk_gb', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('instance_metadata', sa.JSON(), nullable=False),
    sa.Column('project_id', sa.String(length=255), nullable=False),
    sa.Column('flavor', sa.String(length=255), nullable=False),
    sa.Column('flavor_extra_specs', sa.JSON(), nullable=False),
    sa.Column('usage', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['snapshot_id'], ['snapshots.id'], name=op.f('fk_snapshot_instances_snapshot_id_snapshots'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('snapshot_id', 'instance_id', name=op.f('pk_snapshot_instances')),
    **MYSQL)
    op.create_table('snapshot_server_groups',
    sa.Column('snapshot_id', sa.String(length=36), nullable=False),
    sa.Column('group_id', sa.String(length=255), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('policy', sa.String(length=32), nullable=False),
    sa.Column('members', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['snapshot_id'], ['snapshots.id'], name=op.f('fk_snapshot_server_groups_snapshot_id_snapshots'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('snapshot_id', 'group_id', name=op.f('pk_snapshot_server_groups')),
    **MYSQL)
    op.create_table('journal',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('cloud', sa.String(length=255), nullable=False),
    sa.Column('plan_id', sa.String(length=36), nullable=True),
    sa.Column('action', sa.String(length=32), nullable=False),
    sa.Column('target', sa.String(length=255), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('created_at', TIMESTAMP, nullable=False),
    sa.Column('started_at', TIMESTAMP, nullable=True),
    sa.Column('finished_at', TIMESTAMP, nullable=True),
    sa.Column('result', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['plan_id'], ['plans.id'], name=op.f('fk_journal_plan_id_plans')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_journal')),
    **MYSQL)
    with op.batch_alter_table('journal', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_journal_cloud'), ['cloud'], unique=False)
        batch_op.create_index(batch_op.f('ix_journal_plan_id'), ['plan_id'], unique=False)

    op.create_table('plan_migrations',
    sa.Column('plan_id', sa.String(length=36), nullable=False),
    sa.Column('instance_id', sa.String(length=255), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('instance_name', sa.String(length=255), nullable=False),
    sa.Column('source', sa.String(length=255), nullable=False),
    sa.Column('destination', sa.String(length=255), nullable=False),
    sa.Column('wave', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['plan_id'], ['plans.id'], name=op.f('fk_plan_migrations_plan_id_plans'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('plan_id', 'instance_id', name=op.f('pk_plan_migrations')),
    **MYSQL)
    op.create_table('plan_power_actions',
    sa.Column('plan_id', sa.String(length=36), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['plan_id'], ['plans.id'], name=op.f('fk_plan_power_actions_plan_id_plans'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('plan_id', 'host', 'action', name=op.f('pk_plan_power_actions')),
    **MYSQL)



def downgrade() -> None:

    op.drop_table('plan_power_actions')
    op.drop_table('plan_migrations')
    with op.batch_alter_table('journal', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_journal_plan_id'))
        batch_op.drop_index(batch_op.f('ix_journal_cloud'))

    op.drop_table('journal')
    op.drop_table('snapshot_server_groups')
    op.drop_table('snapshot_instances')
    op.drop_table('snapshot_hosts')
    with op.batch_alter_table('plans', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_plans_status'))
        batch_op.drop_index(batch_op.f('ix_plans_cloud'))

    op.drop_table('plans')
    with op.batch_alter_table('snapshots', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_snapshots_taken_at'))
        batch_op.drop_index(batch_op.f('ix_snapshots_cloud'))

    op.drop_table('snapshots')
    op.drop_table('leases')

