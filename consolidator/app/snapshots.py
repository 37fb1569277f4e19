"""Reading the cloud and recording snapshots: the one code path that reads a live cloud."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consolidator.app.context import AppContext
from consolidator.app.settings import inventory_settings
from consolidator.core.errors import ScenarioError, UsageError
from consolidator.core.model import Cluster
from consolidator.core.wording import plural
from consolidator.scenario.files import load_scenario
from consolidator.store.snapshots import (
    Snapshot,
    SnapshotInfo,
    list_snapshots,
    load_snapshot,
    save_snapshot,
)

if TYPE_CHECKING:
    from consolidator.openstack.inventory import Inventory
    from consolidator.telemetry.prometheus import PrometheusSource


def read_cloud(ctx: AppContext, cloud: str | None = None, *, conn: Any = None,
               telemetry: PrometheusSource | None = None) -> Inventory:
    """Read the live cloud (this context's, or `cloud`, or an open connection) as the config
    says: [cloud] ratios, [inventory] paging and workers, and the [telemetry] CPU usage
    statistics when a Prometheus URL is set (or those of `telemetry`, relief's queries)."""
    from consolidator.openstack.inventory import read_inventory

    settings = inventory_settings(ctx.config)
    conn = conn if conn is not None else ctx.connect(cloud)
    inventory = read_inventory(conn, ratios=settings.ratios, page_size=settings.page_size,
                               workers=settings.workers)
    source = telemetry or settings.telemetry
    if source is None:
        return inventory
    from consolidator.telemetry.prometheus import read_usage, with_usage

    read = read_usage(source)
    counted = plural(len(read.usage), "instance")
    notes: tuple[str, ...] = (f"CPU usage statistics for {counted} from {source.url}",)
    if read.short:
        notes += (f"{plural(len(read.short), 'instance')} with fewer than "
                  f"{source.min_samples} usage samples: deviation taken as at least the mean "
                  f"([telemetry] min_samples)",)
    return replace(inventory, cluster=with_usage(inventory.cluster, read.usage),
                   notes=inventory.notes + notes)


def record_snapshot(ctx: AppContext, *, source_suffix: str = "",
                    check: Callable[[Cluster], None] | None = None
                    ) -> tuple[Snapshot, Inventory]:
    """Read the live cloud and store it as one snapshot; report what was read. `check` may
    refuse the cluster read (a scope or host the command names is not in it) before
    anything is stored."""
    from consolidator.openstack.connection import cloud_label

    conn = ctx.connect()
    # openstacksdk's choice: the named cloud, OS_CLOUD, or clouds.yaml's only cloud
    ctx.report(f"reading cloud {cloud_label(conn)!r} ...")
    started = time.monotonic()
    inventory = read_cloud(ctx, conn=conn)
    cluster = inventory.cluster
    ctx.report(f"read {plural(len(cluster.hosts), 'host')}, "
               f"{plural(len(cluster.instances), 'instance')} and "
               f"{len(cluster.server_groups)} server groups in "
               f"{time.monotonic() - started:.1f} s (compute API {inventory.microversion}, "
               f"capacity from {inventory.capacity_source})")
    for note in inventory.notes:
        ctx.report(f"note: {note}")
    if check is not None:
        check(cluster)
    snapshot = store_inventory(ctx, inventory, source_suffix=source_suffix)
    return snapshot, inventory


def store_inventory(ctx: AppContext, inventory: Inventory, *, source_suffix: str = ""
                    ) -> Snapshot:
    """Store an inventory already read as a snapshot of this context's cloud."""
    return inventory_to_store(ctx, inventory, source_suffix=source_suffix)[1]()


def inventory_to_store(ctx: AppContext, inventory: Inventory, *, source_suffix: str = ""
                       ) -> tuple[str, Callable[[], Snapshot]]:
    """An inventory already read, its power settled and read now, as the id its snapshot
    will have and what stores it under that id (nothing is stored until it is called)."""
    import uuid
    from functools import partial

    from consolidator.app.power_readings import read_watts, settle_power

    label = inventory.cloud
    cluster = settle_power(ctx, inventory.cluster)
    readings = read_watts(ctx, cluster)
    snapshot_id = str(uuid.uuid4())
    return snapshot_id, partial(save_snapshot, ctx.engine(), cluster, cloud=label,
                                source=f"cloud:{label}{source_suffix}",
                                capacity_source=inventory.capacity_source,
                                readings=readings, endpoint=inventory.endpoint,
                                snapshot_id=snapshot_id)


def check_read_from(snapshot: SnapshotInfo, inventory: Inventory, doing: str) -> None:
    """Refuse, in one line, to act on the live cloud from a snapshot that was not read from
    it: one recorded from a scenario file, or one read from another cloud (another Keystone
    URL or region, whatever the clouds.yaml entry is called)."""
    if snapshot.cloud.startswith("scenario:") or snapshot.source.startswith("scenario:"):
        raise UsageError(f"snapshot {snapshot.id} was recorded from a scenario file "
                         f"({snapshot.source}), not read from a cloud: it cannot be used to "
                         f"{doing}")
    refuse_another_cloud(snapshot, inventory.endpoint, doing)


def refuse_another_cloud(snapshot: SnapshotInfo, endpoint: str | None, doing: str) -> None:
    """Refuse, in one line, a snapshot read from another cloud than the one at endpoint
    (a snapshot or a connection that cannot tell where it is passes)."""
    if snapshot.endpoint and endpoint and snapshot.endpoint != endpoint:
        raise UsageError(f"snapshot {snapshot.id} was read from another cloud "
                         f"({snapshot.endpoint}), not from this one ({endpoint}): it cannot "
                         f"be used to {doing}")


def record_scenario(ctx: AppContext, path: str,
                    check: Callable[[Cluster], None] | None = None) -> Snapshot:
    """Store a scenario file as a snapshot of a cloud named after the scenario (its name:, else
    the file's stem), never the live cloud's: its plans can be reviewed, not applied. `check`
    may refuse its cluster first, as record_snapshot's."""
    loaded = load_scenario(path)
    if not loaded.cluster.hosts:
        raise ScenarioError(f"{path}: hosts: the list is empty: a scenario needs at least one "
                            f"compute host")
    if check is not None:
        check(loaded.cluster)
    name = str(loaded.extras.get("name") or Path(path).stem)
    cloud = name if name.startswith("scenario:") else f"scenario:{name}"
    return save_snapshot(ctx.engine(), loaded.cluster, cloud=cloud,
                         source=f"scenario:{Path(path).absolute()}",
                         capacity_source="scenario")


def get_snapshot(ctx: AppContext, ref: str) -> Snapshot:
    """A stored snapshot, by id or unique prefix."""
    return load_snapshot(ctx.engine(), ref)


def last_readings(ctx: AppContext) -> dict[str, float]:
    """host -> watts of the newest snapshot of the context's cloud (without a cloud name,
    of any cloud but a scenario's) that has power readings; empty if none."""
    for info in list_snapshots(ctx.engine(), cloud=ctx.cloud_name or None, limit=20):
        if not info.cloud.startswith("scenario:"):
            readings = load_snapshot(ctx.engine(), info.id).readings
            if readings:
                return {r.host: r.watts for r in readings}
    return {}


def snapshot_list(ctx: AppContext, *, limit: int) -> list[SnapshotInfo]:
    """The newest snapshots' headers, newest first."""
    return list_snapshots(ctx.engine(), cloud=None, limit=limit)
