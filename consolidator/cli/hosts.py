"""consolidator hosts ... and journal: the live hosts, their power, and what was done."""

from __future__ import annotations

import json
from typing import Any

import click

from consolidator.cli.apply import BMC_FILE, power_lookup
from consolidator.cli.context import AppContext, pass_app
from consolidator.cli.snapshots import FORMAT
from consolidator.cloud import connect
from consolidator.errors import ConsolidatorError, UsageError
from consolidator.executor import PowerLookup
from consolidator.inventory import read_inventory
from consolidator.model import Cluster
from consolidator.nova import Nova
from consolidator.render import bar, table
from consolidator.store import journal


@click.group("hosts")
def hosts_group() -> None:
    """The live compute hosts and their power."""


@hosts_group.command("list")
@BMC_FILE
@FORMAT
@pass_app
def hosts_list(app: AppContext, bmc_file: str | None, fmt: str) -> None:
    """Each host's service, power (from its BMC where configured), instances and use."""
    cluster = read_inventory(connect(app.cloud_name)).cluster
    rows = host_rows(cluster, power_lookup(app, bmc_file))
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(render_host_rows(rows))


def host_rows(cluster: Cluster, lookup: PowerLookup) -> list[dict[str, Any]]:
    """One row per live host: service, power (asked of its BMC where configured), use."""
    rows = []
    for h, host in enumerate(cluster.hosts):
        driver = lookup(host.name)
        try:
            power = driver.power_state() if driver else f"{host.power} (no BMC)"
        except ConsolidatorError as exc:
            power = f"unknown ({str(exc)[:40]})"
        cap, used = cluster.capacity[h], cluster.usage[h]
        rows.append({"host": host.name, "service": f"{host.status}/{host.state}",
                     "disabled_reason": host.disabled_reason, "power": power,
                     "instances": int(cluster.population[h]),
                     "vcpu": [float(used[0]), float(cap[0])],
                     "memory_mb": [float(used[1]), float(cap[1])]})
    return rows


def render_host_rows(rows: list[dict[str, Any]]) -> str:
    """The table of 'consolidator hosts list'."""
    return table(["HOST", "SERVICE", "POWER", "INSTANCES", "VCPU", "RAM", "REASON"], [
        [r["host"], r["service"], r["power"], r["instances"],
         f"{bar(r['vcpu'][0] / r['vcpu'][1] if r['vcpu'][1] else 0, 10)}",
         f"{bar(r['memory_mb'][0] / r['memory_mb'][1] if r['memory_mb'][1] else 0, 10)}",
         r["disabled_reason"] or ""] for r in rows], align="lllrlll")


@hosts_group.command("power")
@click.argument("action", type=click.Choice(["status", "on", "off"]))
@click.argument("host")
@click.option("--yes", is_flag=True, help="Do not ask before powering off.")
@BMC_FILE
@pass_app
def hosts_power(app: AppContext, action: str, host: str, yes: bool,
                bmc_file: str | None) -> None:
    """Read or change one host's power through its BMC.

    Power-off is refused while any server (any project, any state) is on the host.
    """
    driver = power_lookup(app, bmc_file)(host)
    if driver is None:
        raise UsageError(f"host {host!r} is not in the BMC file")
    if action == "status":
        click.echo(f"{host}: {driver.power_state()}")
        return
    if action == "on":
        click.echo(f"{host}: {driver.power_on()}")
        return
    nova = Nova(connect(app.cloud_name))
    servers = nova.servers_on(host)
    if servers:
        raise ConsolidatorError(f"refusing to power off {host}: {len(servers)} servers are on "
                                f"it (migrate them first, e.g. with a plan)")
    if not yes and not click.confirm(f"power off {host}?", default=False):
        raise click.exceptions.Abort()
    if nova.servers_on(host):  # re-read right before the destructive call
        raise ConsolidatorError(f"refusing to power off {host}: servers appeared on it")
    click.echo(f"{host}: {driver.power_off(graceful=True)}")


@click.command("journal")
@click.option("--plan", "plan_id", metavar="ID", help="Only this plan's actions.")
@click.option("--limit", type=click.IntRange(min=1), default=200, show_default=True)
@FORMAT
@pass_app
def journal_cmd(app: AppContext, plan_id: str | None, limit: int, fmt: str) -> None:
    """The executor's journal: every action, when, and how it ended."""
    from consolidator.store.plans import resolve_plan_id

    engine = app.engine()
    full = resolve_plan_id(engine, plan_id) if plan_id else None
    rows = journal.entries(engine, plan_id=full)[-limit:]
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


COMMANDS = [hosts_group, journal_cmd]
