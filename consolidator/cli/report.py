"""consolidator report: hosts on over time, migrations per cycle and energy, from the database."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import click

from consolidator.app.context import AppContext
from consolidator.app.report import build_report
from consolidator.cli.context import FiniteRange, pass_app, terminal_width
from consolidator.render.plot import check_plot_target, plot_report
from consolidator.render.plot_data import report_series_of
from consolidator.render.report import render_json, render_text


def _utc(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 time") from None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


@click.command("report")
@click.option("--days", type=FiniteRange(min=0, min_open=True), default=7.0,
              show_default=True, help="Length of the period, ending now (or at --until).")
@click.option("--until", callback=_utc, metavar="TIME",
              help="End of the period, ISO 8601 (naive: UTC) [default: now].")
@click.option("--cloud", "cloud_option", metavar="NAME",
              help="The cloud to report on [default: the global --cloud, else the only cloud "
                   "with snapshots].")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format (JSON shape: consolidator/core/report.py).")
@click.option("--plot", "plot", metavar="FILE",
              help="Also draw hosts on, migrations per cycle and the energy saved: FILE.svg, "
                   ".png or .html (needs pip install 'consolidator[plot]').")
@pass_app
def report_cmd(app: AppContext, days: float, until: datetime | None, cloud_option: str | None,
               fmt: str, plot: str | None) -> None:
    """Show the hosts powered on over time, the migrations per cycle and the energy saved.

    Reads only the stored snapshots, plans and journal: the cloud is not contacted.
    """
    if plot:
        check_plot_target(plot)
    end = until or datetime.now(timezone.utc)
    result = build_report(app, cloud_option or app.cloud_name, end - timedelta(days=days), end)
    if plot:
        plot_report(report_series_of(result), plot,
                    title=f"{result.cloud}: {result.start:%Y-%m-%d %H:%M} to "
                          f"{result.end:%Y-%m-%d %H:%M} UTC")
        click.echo(f"wrote {plot}", err=True)
    if fmt == "json":
        click.echo(render_json(result))
    else:
        click.echo(render_text(result, terminal_width()))
