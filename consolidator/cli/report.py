"""consolidator report: hosts on over time, migrations per cycle and energy, from the database."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import click
from sqlalchemy import Engine

from consolidator import report
from consolidator.app.context import AppContext
from consolidator.cli.context import pass_app
from consolidator.errors import UsageError
from consolidator.render.report import render_text
from consolidator.store import journal
from consolidator.store.plans import list_plans, load_plan
from consolidator.store.snapshots import list_snapshots, load_snapshot

#: Enough rows to reach back over any period a report asks for.
_ALL = 1_000_000


def _utc(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 time") from None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


@click.command("report")
@click.option("--days", type=click.FloatRange(min=0, min_open=True), default=7.0,
              show_default=True, help="Length of the period, ending now (or at --until).")
@click.option("--until", callback=_utc, metavar="TIME",
              help="End of the period, ISO 8601 (naive: UTC) [default: now].")
@click.option("--cloud", "cloud_option", metavar="NAME",
              help="The cloud to report on [default: the global --cloud, else the only cloud "
                   "with snapshots].")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format (JSON shape: consolidator/report.py).")
@pass_app
def report_cmd(app: AppContext, days: float, until: datetime | None, cloud_option: str | None,
               fmt: str) -> None:
    """Show the hosts powered on over time, the migrations per cycle and the energy saved.

    Reads only the stored snapshots, plans and journal: the cloud is not contacted.
    """
    engine = app.engine()
    end = until or datetime.now(timezone.utc)
    start = end - timedelta(days=days)
    cloud = cloud_option or app.cloud_name or _only_cloud(engine)
    result = report.build(cloud, start, end, app.config.get("planner", "idle_watts"),
                          _points(engine, cloud, start, end), _cycles(engine, cloud, start, end))
    if fmt == "json":
        click.echo(json.dumps(report.to_json(result), indent=2))
    else:
        click.echo(render_text(result))


def _only_cloud(engine: Engine) -> str:
    clouds = sorted({s.cloud for s in list_snapshots(engine, limit=_ALL)})
    if len(clouds) != 1:
        raise UsageError("no snapshots yet" if not clouds else
                         f"snapshots of several clouds ({', '.join(clouds)}): name one with "
                         f"--cloud")
    return clouds[0]


def _points(engine: Engine, cloud: str, start: datetime, end: datetime
            ) -> list[report.HostsPoint]:
    infos = [i for i in list_snapshots(engine, cloud=cloud, limit=_ALL)
             if start <= i.taken_at <= end]
    return [report.hosts_point(i.taken_at, load_snapshot(engine, i.id).cluster) for i in infos]


def _cycles(engine: Engine, cloud: str, start: datetime, end: datetime) -> list[report.Cycle]:
    rows = [r for r in list_plans(engine, cloud=cloud, limit=_ALL)
            if start <= r.created_at <= end]
    if not rows:
        return []
    by_plan: dict[str, list[journal.Entry]] = {}
    for entry in journal.entries(engine, cloud=cloud):
        if entry.plan_id:
            by_plan.setdefault(entry.plan_id, []).append(entry)
    return [report.cycle(load_plan(engine, r.id), by_plan.get(r.id, [])) for r in rows]


COMMANDS = [report_cmd]
