"""metric totals: counters kept as they happen, so that pruning rows never lowers them

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

#: On MariaDB and MySQL: microseconds (DATETIME(6), holding UTC), and tables that compare
#: strings as PostgreSQL and SQLite do (utf8mb4_bin) in InnoDB (transactions, row locks).
TIMESTAMP = sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mysql', 'mariadb')
MYSQL: dict[str, Any] = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4', 'mysql_collate': 'utf8mb4_bin'}


def upgrade() -> None:
    """Add metric_totals: (name, labels) -> value, seeded with the runs and the live
    migrations the plans and journal hold now."""
    table = op.create_table(
        'metric_totals',
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('labels', sa.String(length=255), nullable=False),
        sa.Column('value', sa.Float(), nullable=False),
        sa.Column('updated_at', TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('name', 'labels', name=op.f('pk_metric_totals')),
        **MYSQL)
    conn = op.get_bind()
    now = datetime.now(timezone.utc)
    rows = []
    for algorithm, status, count in conn.execute(sa.text(
            "SELECT algorithm, status, COUNT(*) FROM plans WHERE status IN "
            "('succeeded', 'failed', 'interrupted') GROUP BY algorithm, status")):
        kind = "rollback" if algorithm == "rollback" else "plan"
        rows.append(("runs_total", f"kind={kind},result={status}", count))
    for state, count in conn.execute(sa.text(
            "SELECT state, COUNT(*) FROM journal WHERE action = 'migrate' AND state IN "
            "('succeeded', 'failed') GROUP BY state")):
        rows.append(("journal_migrations_total", f"result={state}", count))
    merged: dict[tuple[str, str], float] = {}
    for name, labels, count in rows:
        merged[(name, labels)] = merged.get((name, labels), 0.0) + float(count)
    if merged:
        op.bulk_insert(table, [{"name": n, "labels": lab, "value": v, "updated_at": now}
                               for (n, lab), v in merged.items()])


def downgrade() -> None:
    """Drop it again."""
    op.drop_table('metric_totals')
