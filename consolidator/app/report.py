"""A cloud's history from the database: the report and the snapshot listings."""

from __future__ import annotations

from datetime import datetime, timezone

from consolidator.app.context import AppContext
from consolidator.app.settings import energy_settings
from consolidator.core import report
from consolidator.core.errors import UsageError
from consolidator.core.journal_entry import Entry
from consolidator.store import journal
from consolidator.store.plans import list_plans, load_plan
from consolidator.store.snapshots import list_snapshots, load_snapshot

#: Enough rows to reach back over any period a report asks for.
_ALL = 1_000_000


def build_report(ctx: AppContext, cloud: str | None, start: datetime, end: datetime
                 ) -> report.Report:
    """The report of one cloud (the only one with snapshots if None) over a period."""
    engine = ctx.engine()
    name = cloud or _only_cloud(ctx)
    newest = list_snapshots(engine, cloud=name, limit=1)
    if not newest:
        known = sorted({s.cloud for s in list_snapshots(engine, limit=_ALL)})
        raise UsageError(f"no snapshots of cloud {name!r}"
                         + (f": the clouds with snapshots are {', '.join(known)}" if known
                            else ": record one with 'consolidator snapshot'"))
    infos = [i for i in list_snapshots(engine, cloud=name, limit=_ALL)
             if start <= i.taken_at <= end]
    points = [report.hosts_point(snap.info.taken_at, snap.cluster, snap.readings)
              for snap in (load_snapshot(engine, i.id) for i in infos)]
    return report.build(name, start, end, energy_settings(ctx.config).idle_watts, points,
                        _cycles(ctx, name, start, end), latest_snapshot=newest[0].taken_at,
                        read_at=datetime.now(timezone.utc))


def _only_cloud(ctx: AppContext) -> str:
    clouds = sorted({s.cloud for s in list_snapshots(ctx.engine(), limit=_ALL)})
    if len(clouds) != 1:
        raise UsageError("no snapshots yet" if not clouds else
                         f"snapshots of several clouds ({', '.join(clouds)}): name one with "
                         f"--cloud")
    return clouds[0]


def _cycles(ctx: AppContext, cloud: str, start: datetime, end: datetime
            ) -> list[report.Cycle]:
    engine = ctx.engine()
    rows = [r for r in list_plans(engine, cloud=cloud, limit=_ALL)
            if start <= r.created_at <= end]
    if not rows:
        return []
    by_plan: dict[str, list[Entry]] = {}
    for entry in journal.entries(engine, cloud=cloud):
        if entry.plan_id:
            by_plan.setdefault(entry.plan_id, []).append(entry)
    return [report.cycle(load_plan(engine, r.id), by_plan.get(r.id, [])) for r in rows]


def report_json(found: report.Report) -> dict:
    """The report as JSON (the shape of core/report.py's docstring)."""
    return report.to_json(found)
