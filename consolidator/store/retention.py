"""Retention: remove snapshots, plans and journal rows older than a cutoff that nothing still
needs ('consolidator db prune', [database] keep_days, the daemon after each cycle).

Kept whatever their age:
- live plans (proposed, approved, running, failed: a failed plan can be resumed), their
  journal rows and their snapshots;
- each host's newest journal row of every power and service action (power_off, power_on,
  disable, enable, force_down...): rollback reads them to know what consolidator did, and
  the plan that wrote such a row;
- the snapshots the kept plans were made from, the snapshots the kept rollback plans go
  back to, and the newest snapshot of each cloud.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, delete, func, select

from consolidator.store.db import translate_errors
from consolidator.store.tables import journal, plans, snapshots

#: Plans that may still run, or be resumed.
LIVE = ("proposed", "approved", "running", "failed")


@dataclass(frozen=True)
class Pruned:
    """How many rows a prune removed (or would remove)."""

    snapshots: int
    plans: int
    journal: int


def prune(engine: Engine, before: datetime, *, dry_run: bool = False) -> Pruned:
    """Remove (dry_run: only count) what is older than `before` and no longer needed."""
    with translate_errors(engine), engine.begin() as conn:
        # the newest row of each (cloud, target, action) that is not a migration
        newest = (select(func.max(journal.c.id)).where(journal.c.action != "migrate")
                  .group_by(journal.c.cloud, journal.c.target, journal.c.action))
        kept_rows = set(conn.execute(newest).scalars())
        plan_rows = conn.execute(select(plans.c.id, plans.c.status, plans.c.created_at,
                                        plans.c.snapshot_id, plans.c.details)).all()
        needed_by_rows = set(conn.execute(select(journal.c.plan_id).where(
            journal.c.id.in_(kept_rows), journal.c.plan_id.is_not(None))).scalars()) \
            if kept_rows else set()
        old_plans = {p.id for p in plan_rows if p.created_at < before
                     and p.status not in LIVE and p.id not in needed_by_rows}
        kept_plans = [p for p in plan_rows if p.id not in old_plans]
        needed_snaps = {p.snapshot_id for p in kept_plans} | {
            str(((p.details or {}).get("options") or {}).get("target_snapshot"))
            for p in kept_plans}
        newest_snaps = _newest_per_cloud(conn)
        old_snaps = {s for s in conn.execute(select(snapshots.c.id).where(
            snapshots.c.taken_at < before)).scalars()
            if s not in needed_snaps and s not in newest_snaps}
        old_rows = set(conn.execute(select(journal.c.id).where(
            journal.c.created_at < before)).scalars()) - kept_rows
        recent = [p.id for p in plan_rows if p.status in LIVE or p.created_at >= before]
        if recent:   # a live or recent plan keeps all its rows
            old_rows -= set(conn.execute(select(journal.c.id).where(
                journal.c.plan_id.in_(recent))).scalars())
        # a pruned plan's rows go with it, whatever their age
        if old_plans:
            old_rows |= set(conn.execute(select(journal.c.id).where(
                journal.c.plan_id.in_(old_plans))).scalars()) - kept_rows
        if not dry_run:
            _delete(conn, journal.c.id, old_rows)
            _delete(conn, plans.c.id, old_plans)
            _delete(conn, snapshots.c.id, old_snaps)
    return Pruned(len(old_snaps), len(old_plans), len(old_rows))


def _newest_per_cloud(conn: object) -> set[str]:
    """The id of each cloud's newest snapshot."""
    latest = (select(snapshots.c.cloud, func.max(snapshots.c.taken_at).label("at"))
              .group_by(snapshots.c.cloud).subquery())
    query = select(snapshots.c.id).join(latest, (snapshots.c.cloud == latest.c.cloud)
                                        & (snapshots.c.taken_at == latest.c.at))
    return set(conn.execute(query).scalars())  # type: ignore[attr-defined]


def _delete(conn: object, column: object, ids: set) -> None:
    """Delete the rows whose column is in ids, a chunk at a time (child rows cascade)."""
    chosen = sorted(ids)
    for start in range(0, len(chosen), 500):
        conn.execute(delete(column.table).where(  # type: ignore[attr-defined]
            column.in_(chosen[start:start + 500])))  # type: ignore[attr-defined]
