"""consolidator hosts ... and journal: the live hosts, their power, and what was done."""

from __future__ import annotations

from datetime import datetime

import click

from consolidator.app import power
from consolidator.app.context import AppContext
from consolidator.app.hosts import host_rows
from consolidator.app.review import journal_entries
from consolidator.cli.context import BMC_FILE, echo_listing, output_options, parse_since, pass_app
from consolidator.render.hosts import HOST_COLUMNS, JOURNAL_COLUMNS, entry_json
from consolidator.render.listing import Output, listing


@click.group("hosts")
def hosts_group() -> None:
    """The live compute hosts and their power."""


@hosts_group.command("list")
@BMC_FILE
@output_options()
@pass_app
def hosts_list(app: AppContext, bmc_file: str | None, out: Output) -> None:
    """Each host's service, power (from its BMC where configured), instances and use."""
    app.bmc_file = bmc_file
    rows = host_rows(app)
    echo_listing(listing(rows, HOST_COLUMNS, out))
    unread = [r["host"] for r in rows if r["power_error"]]
    if unread and out.fmt == "table" and not out.long:
        click.echo(f"power unknown for {', '.join(unread)}: --long shows why (POWER ERROR)",
                   err=True)


@hosts_group.command("power")
@click.argument("action", type=click.Choice(["status", "on", "off"]))
@click.argument("host")
@click.option("--yes", is_flag=True, help="Do not ask before powering off.")
@click.option("--force", is_flag=True,
              help="Power off outside a plan (needed for 'off'; the checks still run). With "
                   "'on': end a shutdown that is pending while the BMC still reads on (only "
                   "when you know it will not happen).")
@BMC_FILE
@pass_app
def hosts_power(app: AppContext, action: str, host: str, yes: bool, force: bool,
                bmc_file: str | None) -> None:
    """Read or change one host's power through its BMC.

    HOST is its hypervisor hostname or its nova-compute host. Power-off takes the cloud's
    executor lease, disables the service, and is refused while any server (any project, any
    state), unfinished migration or Placement allocation is on the host; the host is then
    marked forced down. Power-on clears that mark and enables a host consolidator disabled
    (or 'hosts power off --force': the operator's hold, which nothing else undoes). A power-on
    of a host whose shutdown is pending waits for its BMC to read off.
    """
    app.bmc_file = bmc_file
    if action == "status":
        click.echo(f"{host}: {power.power_status(app, host)}")
    elif action == "on":
        click.echo(f"{host}: {power.power_on(app, host, force=force)}")
    else:
        click.echo(f"{host}: " + power.power_off(
            app, host, force=force,
            confirm=lambda question: yes or click.confirm(question, default=False,
                                                          abort=True)))


@click.command("journal")
@click.option("--plan", "plan_id", metavar="ID", help="Only this plan's actions.")
@click.option("--host", metavar="HOST",
              help="Only actions on this host (a migration's source or destination too).")
@click.option("--since", callback=parse_since, metavar="TIME",
              help="Only actions since TIME: ISO 8601 (naive: UTC), or an age: 30m, 2h, 7d.")
@click.option("--action", "actions", multiple=True, metavar="ACTION",
              help="Only this action (migrate, disable, power_off, power_on, enable, ...); "
                   "repeat for more.")
@click.option("--limit", type=click.IntRange(min=1), default=200, show_default=True,
              help="Show the last N journal rows.", metavar="N")
@output_options()
@pass_app
def journal_cmd(app: AppContext, plan_id: str | None, host: str | None,
                since: datetime | None, actions: tuple[str, ...], limit: int,
                out: Output) -> None:
    """The executor's journal: every action, when, on which host, by whom, and how it
    ended."""
    rows = journal_entries(app, plan_ref=plan_id, limit=limit, host=host, since=since,
                           actions=actions)
    echo_listing(listing([entry_json(e) for e in rows], JOURNAL_COLUMNS, out))


def _add_maintenance() -> None:
    """hosts drain and hosts undrain live in cli/drains.py."""
    from consolidator.cli.drains import drain_cmd, undrain_cmd

    hosts_group.add_command(drain_cmd)
    hosts_group.add_command(undrain_cmd)


_add_maintenance()
