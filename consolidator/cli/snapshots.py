"""consolidator snapshot / snapshots ...: record, list, show and export snapshots."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from sqlalchemy import Engine

from consolidator.cli.context import AppContext, pass_app
from consolidator.cloud import connect
from consolidator.inventory import FallbackRatios, snapshot_cloud
from consolidator.model import Cluster
from consolidator.render import kv, table
from consolidator.scenario import cluster_to_document, dump_document, load_scenario
from consolidator.store.snapshots import Snapshot, list_snapshots, load_snapshot, save_snapshot
from consolidator.telemetry import PrometheusSource

FORMAT = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
                      show_default=True, help="Output format.")


@click.command("snapshot")
@click.option("--scenario", type=click.Path(dir_okay=False),
              help="Record a scenario file (YAML or JSON) instead of the live cloud named by "
                   "--cloud / OS_CLOUD in clouds.yaml.")
@pass_app
def snapshot_cmd(app: AppContext, scenario: str | None) -> None:
    """Record the cloud's placement as a new snapshot and print its id."""
    engine = app.engine()
    if scenario is None:
        click.echo(record_live_snapshot(app, engine))
        return
    loaded = load_scenario(scenario)
    cloud = app.cloud_name or str(loaded.extras.get("name") or Path(scenario).stem)
    snapshot_id = save_snapshot(engine, loaded.cluster, cloud=cloud,
                                source=f"scenario:{Path(scenario).absolute()}",
                                capacity_source="scenario")
    click.echo(snapshot_id)


def record_live_snapshot(app: AppContext, engine: Engine) -> str:
    """Snapshot the live cloud, reporting progress on stderr; return the snapshot id."""
    config = app.config
    conn = connect(app.cloud_name)
    label = app.cloud_name or "default"
    click.echo(f"reading cloud {label!r} ...", err=True)
    started = time.monotonic()
    ratios = FallbackRatios(cpu=config.get("cloud", "cpu_allocation_ratio"),
                            ram=config.get("cloud", "ram_allocation_ratio"),
                            disk=config.get("cloud", "disk_allocation_ratio"))
    url = config.get("telemetry", "prometheus_url")
    telemetry = PrometheusSource(
        url=url, mean_query=config.get("telemetry", "cpu_mean_query"),
        std_query=config.get("telemetry", "cpu_std_query"),
        instance_label=config.get("telemetry", "instance_label"),
        timeout=config.get("telemetry", "timeout")) if url else None
    snapshot_id, inventory = snapshot_cloud(
        engine, conn, ratios=ratios, page_size=config.get("inventory", "page_size"),
        workers=config.get("inventory", "workers"), telemetry=telemetry)
    cluster = inventory.cluster
    click.echo(f"read {len(cluster.hosts)} hosts, {len(cluster.instances)} instances and "
               f"{len(cluster.server_groups)} server groups in "
               f"{time.monotonic() - started:.1f} s (compute API {inventory.microversion}, "
               f"capacity from {inventory.capacity_source})", err=True)
    for note in inventory.notes:
        click.echo(f"note: {note}", err=True)
    return snapshot_id


@click.group("snapshots")
def snapshots_group() -> None:
    """List, show and export recorded snapshots."""


@snapshots_group.command("list")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="How many of the newest snapshots to list.")
@FORMAT
@pass_app
def snapshots_list(app: AppContext, limit: int, fmt: str) -> None:
    """List snapshots, newest first."""
    infos = list_snapshots(app.engine(), cloud=None, limit=limit)
    if fmt == "json":
        click.echo(json.dumps([_info_json(i) for i in infos], indent=2))
        return
    if not infos:
        click.echo("no snapshots yet: record one with 'consolidator snapshot'")
        return
    click.echo(table(["ID", "CLOUD", "TAKEN (UTC)", "HOSTS", "INSTANCES", "SOURCE"],
                     [[i.id, i.cloud, i.taken_at.strftime("%Y-%m-%d %H:%M:%S"), i.host_count,
                       i.instance_count, i.source] for i in infos]))


@snapshots_group.command("show")
@click.argument("snapshot_id")
@FORMAT
@pass_app
def snapshots_show(app: AppContext, snapshot_id: str, fmt: str) -> None:
    """Show a snapshot: its hosts, their service and power, population and use.

    --format json gives every field of every host, instance and server group.
    """
    snap = load_snapshot(app.engine(), snapshot_id)
    if fmt == "json":
        click.echo(json.dumps(snapshot_json(snap), indent=2))
        return
    click.echo(kv([("snapshot", snap.info.id), ("cloud", snap.info.cloud),
                   ("taken", snap.info.taken_at.isoformat(timespec="seconds")),
                   ("source", snap.info.source),
                   ("capacity from", snap.info.capacity_source),
                   ("hosts", snap.info.host_count), ("instances", snap.info.instance_count),
                   ("server groups", len(snap.cluster.server_groups))]))
    click.echo()
    click.echo(hosts_table(snap.cluster))


def hosts_table(cluster: Cluster) -> str:
    """One row per host: service, power, population and use against capacity."""
    rows = []
    for i, host in enumerate(cluster.hosts):
        cap = cluster.capacity[i]
        used = cluster.usage[i]
        rows.append([host.name, host.availability_zone, f"{host.status}/{host.state}",
                     host.power, int(cluster.population[i]),
                     f"{used[0]:g}/{cap[0]:g}",
                     f"{used[1] / 1024:.0f}/{cap[1] / 1024:.0f}",
                     f"{used[2]:g}/{cap[2]:g}"])
    return table(["HOST", "AZ", "SERVICE", "POWER", "INSTANCES", "VCPU", "RAM GiB", "DISK GB"],
                 rows, align="llllrrrr")


def _info_json(info: object) -> dict:
    data = dict(vars(info))
    data["taken_at"] = data["taken_at"].isoformat()
    return data


def snapshot_json(snap: Snapshot) -> dict:
    """The JSON form of a snapshot: its header and every field of its cluster."""
    return {**_info_json(snap.info), **cluster_to_document(snap.cluster, full=True)}


@snapshots_group.command("export")
@click.argument("snapshot_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write to this file (.json for JSON, else YAML) instead of stdout.")
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default=None,
              help="Scenario format [default: from the file name, else yaml].")
@pass_app
def snapshots_export(app: AppContext, snapshot_id: str, output: str | None,
                     fmt: str | None) -> None:
    """Write a snapshot as a scenario file that 'snapshot --scenario' loads back."""
    snap = load_snapshot(app.engine(), snapshot_id)
    doc = cluster_to_document(snap.cluster, {"name": snap.info.cloud})
    text = dump_document(doc, output, fmt)
    if output is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote snapshot {snap.info.id} to {output}", err=True)


COMMANDS = [snapshot_cmd, snapshots_group]
