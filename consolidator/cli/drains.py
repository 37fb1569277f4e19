"""consolidator hosts drain / undrain: host maintenance as a stored, reviewable plan."""

from __future__ import annotations

import json

import click

from consolidator.app.context import AppContext
from consolidator.app.drain_hosts import DrainRequest, plan_drain, undrain
from consolidator.cli.context import BMC_FILE, FORMAT, pass_app, terminal_width
from consolidator.core.errors import ConsolidatorError
from consolidator.render.plan import render_plan


@click.command("drain")
@click.argument("hosts", nargs=-1)
@click.option("--aggregate", metavar="NAME", help="Drain every host of this host aggregate.")
@click.option("--power-off", is_flag=True,
              help="Power the drained hosts off once empty (guarded, as a plan's power-off).")
@click.option("--yes", is_flag=True,
              help="Approve and run the drain plan at once; without it the plan is stored "
                   "as proposed for review ('consolidator apply PLAN').")
@BMC_FILE
@FORMAT
@pass_app
def drain_cmd(app: AppContext, hosts: tuple[str, ...], aggregate: str | None, power_off: bool,
              yes: bool, bmc_file: str | None, fmt: str) -> None:
    """Move every instance off the named hosts (or an aggregate's) and keep them disabled.

    The drain is a plan: it keeps the planner's constraints, runs through the executor's
    limits and journal, and can be rolled back. Each host is disabled with the reason
    'consolidator: drained by plan ID' before the first migration. An instance that cannot
    move (pinned, in a hard affinity group, not ACTIVE, of an excluded project, or without
    room) blocks the drain before anything moves, and is named. Bring a host back with
    'consolidator hosts undrain HOST'.
    """
    app.bmc_file = bmc_file
    stored, snapshot = plan_drain(app, DrainRequest(hosts=hosts, aggregate=aggregate,
                                                    power_off=power_off))
    if fmt == "json":
        click.echo(json.dumps(stored.to_json(), indent=2))
    else:
        click.echo(render_plan(stored, snapshot.cluster, approve_hint=False,
                               width=terminal_width()))
    if not yes:
        click.echo(f"drain plan {stored.id} is proposed: review it, then run it with "
                   f"'consolidator apply {stored.id} --yes'", err=True)
        return
    from consolidator.app.apply import check_applicable
    from consolidator.cli.apply import run_and_summarise

    check_applicable(app, stored.id, yes=True, dry_run=False, resume=False)
    outcome = run_and_summarise(app, stored.id, max_parallel=None, dry_run=False,
                                resume=False, kind="drain plan")
    if not outcome.ok:
        raise ConsolidatorError(f"drain plan {stored.id} did not finish: see the summary "
                                f"above and 'consolidator journal --plan {stored.id}'")


@click.command("undrain")
@click.argument("hosts", nargs=-1, required=True)
@BMC_FILE
@pass_app
def undrain_cmd(app: AppContext, hosts: tuple[str, ...], bmc_file: str | None) -> None:
    """Bring drained hosts back: power on first if the drain powered them off, then enable.

    Each step is journaled under the drain's plan and holds the executor lease; a host no
    drain disabled is refused.
    """
    app.bmc_file = bmc_file
    for line in undrain(app, hosts):
        click.echo(line)
