"""consolidator snapshot / snapshots ...: record, list, show and export snapshots."""

from __future__ import annotations

import click

from consolidator.app.context import AppContext
from consolidator.app.snapshot_documents import export_snapshot, info_json, snapshot_json
from consolidator.app.snapshots import (
    get_snapshot,
    record_scenario,
    record_snapshot,
    snapshot_list,
)
from consolidator.cli.context import BMC_FILE, echo_listing, output_options, pass_app
from consolidator.render import kv
from consolidator.render.fit import fit_kv
from consolidator.render.hosts import snapshot_hosts
from consolidator.render.listing import ID_PREFIX, TO_THE_MINUTE, Column, Output, listing, show


@click.command("snapshot")
@click.option("--scenario", type=click.Path(dir_okay=False),
              help="Record a scenario file (YAML or JSON) instead of the live cloud named by "
                   "--cloud / OS_CLOUD in clouds.yaml.")
@BMC_FILE
@pass_app
def snapshot_cmd(app: AppContext, scenario: str | None, bmc_file: str | None) -> None:
    """Record the cloud's placement as a new snapshot and print its id.

    The power draw of every powered host the BMC file lists is read from its BMC
    ([energy] read_power); a BMC without a reading is left out.
    """
    app.bmc_file = bmc_file
    app.engine()
    snapshot = record_scenario(app, scenario) if scenario else record_snapshot(app)[0]
    click.echo(snapshot.info.id)


@click.group("snapshots")
def snapshots_group() -> None:
    """List, show and export recorded snapshots."""


#: The columns of 'snapshots list' (SOURCE with --long).
SNAPSHOT_COLUMNS = (
    Column("ID", ("id",), short=ID_PREFIX), Column("CLOUD", ("cloud",), wrap=10),
    Column("TAKEN (UTC)", ("taken_at",), short=TO_THE_MINUTE,
           cell=lambda r: r["taken_at"][:19].replace("T", " ")),
    Column("HOSTS", ("host_count",)), Column("INSTANCES", ("instance_count",)),
    Column("SOURCE", ("source",), long=True, wrap=16),
    Column("CAPACITY FROM", ("capacity_source",), long=True))


@snapshots_group.command("list")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="How many of the newest snapshots to list.")
@output_options()
@pass_app
def snapshots_list(app: AppContext, limit: int, out: Output) -> None:
    """List snapshots, newest first."""
    infos = snapshot_list(app, limit=limit)
    if not infos and out.fmt == "table":
        click.echo("no snapshots yet: record one with 'consolidator snapshot'")
        return
    echo_listing(listing([info_json(i) for i in infos], SNAPSHOT_COLUMNS, out))


@snapshots_group.command("show")
@click.argument("snapshot_id")
@output_options(long=False, sort=False)
@pass_app
def snapshots_show(app: AppContext, snapshot_id: str, out: Output) -> None:
    """Show a snapshot: its hosts, their service and power, population and use.

    --format json gives every field of every host, instance and server group.
    """
    snap = get_snapshot(app, snapshot_id)

    def view() -> str:
        return "\n".join([fit_kv(kv([
            ("snapshot", snap.info.id), ("cloud", snap.info.cloud),
            ("taken", snap.info.taken_at.isoformat(timespec="seconds")),
            ("source", snap.info.source), ("capacity from", snap.info.capacity_source),
            ("hosts", snap.info.host_count), ("instances", snap.info.instance_count),
            ("server groups", len(snap.cluster.server_groups)),
            ("power read", f"{sum(r.watts for r in snap.readings):.0f} W from "
                           f"{len(snap.readings)} BMCs" if snap.readings else "no readings")]),
                     out.width),
            "", snapshot_hosts(snap.cluster, {r.host: r.watts for r in snap.readings},
                               out.width)])
    click.echo(show(snapshot_json(snap), SNAPSHOT_COLUMNS, out, view))


@snapshots_group.command("export")
@click.argument("snapshot_id")
@click.option("--output", type=click.Path(dir_okay=False),
              help="Write to this file (.json for JSON, else YAML) instead of stdout.")
@click.option("-f", "--format", "fmt", type=click.Choice(["yaml", "json"]), default=None,
              help="Scenario format [default: from the file name, else yaml].")
@pass_app
def snapshots_export(app: AppContext, snapshot_id: str, output: str | None,
                     fmt: str | None) -> None:
    """Write a snapshot as a scenario file that 'snapshot --scenario' loads back."""
    snapshot, text = export_snapshot(app, snapshot_id, output, fmt)
    if output is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote snapshot {snapshot} to {output}", err=True)
