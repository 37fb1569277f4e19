"""A throw-away copy of the rows a dry run needs, so that it stores nothing in the real
database."""

from __future__ import annotations

import tempfile
import weakref
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, Table, select

from consolidator.store.db import make_engine, translate_errors, upgrade
from consolidator.store.tables import (
    journal,
    plan_migrations,
    plan_power_actions,
    plans,
    snapshot_hosts,
    snapshot_instances,
    snapshot_server_groups,
    snapshots,
)


def scratch_copy(engine: Engine, *, cloud: str, plan_ids: Iterable[str] = (),
                 snapshot_ids: Iterable[str] = (), since: datetime | None = None) -> Engine:
    """A new SQLite database in a temporary directory (removed with the engine) holding the
    given plans, their snapshots, the named snapshots, the cloud's journal and (with since)
    the cloud's snapshots taken since then and the newest one before (demand samples)."""
    plan_ids, snapshot_ids = set(plan_ids), set(snapshot_ids)
    if since is not None:
        snapshot_ids |= _recent(engine, cloud, since)
    directory = tempfile.TemporaryDirectory(prefix="consolidator-dry-run-")
    scratch = make_engine(f"sqlite:///{Path(directory.name) / 'dry-run.db'}")
    weakref.finalize(scratch, directory.cleanup)
    upgrade(scratch)
    with translate_errors(engine), engine.connect() as source:
        plan_rows = [dict(r._mapping) for r in source.execute(
            select(plans).where(plans.c.id.in_(plan_ids)))]
        snapshot_ids |= {r["snapshot_id"] for r in plan_rows}
        copied: list[tuple[Table, list[dict[str, Any]]]] = [
            (snapshots, _rows(source, snapshots, snapshots.c.id.in_(snapshot_ids)))]
        copied += [(t, _rows(source, t, t.c.snapshot_id.in_(snapshot_ids)))
                   for t in (snapshot_hosts, snapshot_instances, snapshot_server_groups)]
        copied.append((plans, plan_rows))
        copied += [(t, _rows(source, t, t.c.plan_id.in_(plan_ids)))
                   for t in (plan_migrations, plan_power_actions)]
        entries = _rows(source, journal, journal.c.cloud == cloud)
    for entry in entries:
        if entry["plan_id"] not in plan_ids:
            entry["plan_id"] = None
    copied.append((journal, entries))
    with scratch.begin() as target:
        for table, rows in copied:
            if rows:
                target.execute(table.insert(), rows)
    return scratch


def _recent(engine: Engine, cloud: str, since: datetime) -> set[str]:
    """The cloud's snapshots with usage statistics taken since `since`, and the newest one
    before it: what store.snapshots.demand_samples reads."""
    with_usage = (select(snapshot_instances.c.snapshot_id)
                  .where(snapshot_instances.c.usage.is_not(None)).distinct())
    base = select(snapshots.c.id).where(snapshots.c.cloud == cloud,
                                        snapshots.c.id.in_(with_usage.scalar_subquery()))
    with translate_errors(engine), engine.connect() as conn:
        ids = set(conn.execute(base.where(snapshots.c.taken_at >= since)).scalars())
        ids |= set(conn.execute(base.where(snapshots.c.taken_at < since)
                                .order_by(snapshots.c.taken_at.desc()).limit(1)).scalars())
    return ids


def _rows(conn: Connection, table: Table, where: ColumnElement[bool]) -> list[dict[str, Any]]:
    return [dict(r._mapping) for r in conn.execute(select(table).where(where))]
