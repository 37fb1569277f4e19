"""consolidator hosts ... and journal: the live hosts, their power, and what was done."""

from __future__ import annotations

import json

import click

from consolidator.app import power
from consolidator.app.context import AppContext
from consolidator.app.hosts import host_rows
from consolidator.app.review import journal_entries
from consolidator.cli.context import BMC_FILE, FORMAT, pass_app
from consolidator.render import table
from consolidator.render.hosts import live_hosts


@click.group("hosts")
def hosts_group() -> None:
    """The live compute hosts and their power."""


@hosts_group.command("list")
@BMC_FILE
@FORMAT
@pass_app
def hosts_list(app: AppContext, bmc_file: str | None, fmt: str) -> None:
    """Each host's service, power (from its BMC where configured), instances and use."""
    app.bmc_file = bmc_file
    rows = host_rows(app)
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(live_hosts(rows))


@hosts_group.command("power")
@click.argument("action", type=click.Choice(["status", "on", "off"]))
@click.argument("host")
@click.option("--yes", is_flag=True, help="Do not ask before powering off.")
@click.option("--force", is_flag=True,
              help="Power off outside a plan (needed for 'off'; the checks still run).")
@BMC_FILE
@pass_app
def hosts_power(app: AppContext, action: str, host: str, yes: bool, force: bool,
                bmc_file: str | None) -> None:
    """Read or change one host's power through its BMC.

    HOST is its hypervisor hostname or its nova-compute host. Power-off takes the cloud's
    executor lease, disables the service, and is refused while any server (any project, any
    state), unfinished migration or Placement allocation is on the host; the host is then
    marked forced down. Power-on clears that mark and enables a host consolidator disabled.
    """
    app.bmc_file = bmc_file
    if action == "status":
        click.echo(f"{host}: {power.power_status(app, host)}")
    elif action == "on":
        click.echo(f"{host}: {power.power_on(app, host)}")
    else:
        click.echo(f"{host}: " + power.power_off(
            app, host, force=force,
            confirm=lambda question: yes or click.confirm(question, default=False,
                                                          abort=True)))


@click.command("journal")
@click.option("--plan", "plan_id", metavar="ID", help="Only this plan's actions.")
@click.option("--limit", type=click.IntRange(min=1), default=200, show_default=True,
              help="Show the last N journal rows.", metavar="N")
@FORMAT
@pass_app
def journal_cmd(app: AppContext, plan_id: str | None, limit: int, fmt: str) -> None:
    """The executor's journal: every action, when, and how it ended."""
    rows = journal_entries(app, plan_ref=plan_id, limit=limit)
    if fmt == "json":
        click.echo(json.dumps([{**vars(e), "created_at": e.created_at.isoformat(),
                                "started_at": e.started_at and e.started_at.isoformat(),
                                "finished_at": e.finished_at and e.finished_at.isoformat()}
                               for e in rows], indent=2))
        return
    click.echo(table(["ID", "WHEN (UTC)", "ACTION", "TARGET", "STATE", "RESULT"], [
        [e.id, e.created_at.strftime("%Y-%m-%d %H:%M:%S"), e.action,
         e.params.get("instance", e.target), e.state, (e.result or "")[:70]] for e in rows],
        align="rlllll"))


def _add_maintenance() -> None:
    """hosts drain and hosts undrain live in cli/drains.py."""
    from consolidator.cli.drains import drain_cmd, undrain_cmd

    hosts_group.add_command(drain_cmd)
    hosts_group.add_command(undrain_cmd)


_add_maintenance()
