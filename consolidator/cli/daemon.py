"""consolidator daemon [--once]: the hourly consolidation service."""

from __future__ import annotations

import logging

import click

from consolidator.app.context import AppContext
from consolidator.app.metrics import start_metrics
from consolidator.cli.context import BMC_FILE, pass_app
from consolidator.core.errors import ConsolidatorError
from consolidator.core.wording import plural
from consolidator.daemon import Daemon, cron_trigger


def host_line(counts: dict[str, int]) -> str:
    """'3 active, 1 spare, 2 powered off': a cycle's host counts."""
    return (f"{counts.get('active', 0)} active, {counts.get('spare', 0)} spare, "
            f"{counts.get('powered_off', 0)} powered off")


@click.command("daemon")
@click.option("--once", is_flag=True,
              help="Run one cycle now and exit with its result (for cron).")
@BMC_FILE
@pass_app
def daemon_cmd(app: AppContext, once: bool, bmc_file: str | None) -> None:
    """Snapshot, plan, (auto-)apply and keep the padding on schedule ([daemon], [padding]).

    Run two daemons on one PostgreSQL database for high availability: the one holding the
    lease works, the other stands by and takes over within [daemon] lease_ttl.
    """
    if app.verbose == 0:
        logging.getLogger("consolidator").setLevel(logging.INFO)
    app.bmc_file = bmc_file
    app.engine()
    trigger = cron_trigger(app.config)  # a bad schedule fails now, in one line
    daemon = Daemon(app, metrics=start_metrics(app))
    if not once:
        click.echo(f"daemon starting: next cycle at {trigger.get_next_fire_time(None, _now())}",
                   err=True)
        daemon.serve()
        return
    result = daemon.once()      # the lease is given back however the cycle ends
    if result.failed:
        raise ConsolidatorError(f"cycle failed: {result.failed}")
    if result.skipped:
        click.echo(f"cycle skipped: {result.skipped}")
        return
    outcome = result.outcome
    click.echo(f"cycle done in {result.duration_s:.1f} s: snapshot {result.snapshot_id}, plan "
               f"{result.plan_id} ("
               f"{plural(result.migrations_planned, 'migration')} planned), spare "
               f"target {result.spare_target}")
    click.echo(f"hosts: {host_line(result.hosts)}")
    if outcome is not None:
        click.echo(f"applied: {len(outcome.migrated)} migrated, {len(outcome.powered_off)} "
                   f"powered off, {len(outcome.failed)} failed")
    if result.powered_on:
        click.echo(f"powered on for the padding: {', '.join(result.powered_on)}")
    relief = result.relief
    if relief is not None and relief.overloaded:
        click.echo(f"relief: {', '.join(relief.overloaded)} overloaded; "
                   f"{relief.migrated} migrated"
                   + (f", powered on {', '.join(relief.powered_on)}" if relief.powered_on
                      else "")
                   + (f"; still overloaded: {', '.join(relief.unresolved)}"
                      if relief.unresolved else ""))
    if outcome is not None and not outcome.ok:
        raise ConsolidatorError(f"the cycle's plan {result.plan_id} did not finish: see "
                                f"'consolidator journal --plan {result.plan_id}'")


def _now():  # noqa: ANN202
    from datetime import datetime
    return datetime.now().astimezone()
