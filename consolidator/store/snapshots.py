"""Snapshots: a Cluster written in one transaction, and read back identically."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from sqlalchemy import ColumnElement, Engine, Subquery, Table, func, select

from consolidator.core.demand import DemandSample, cpu_demand
from consolidator.core.energy_model import Reading
from consolidator.core.model import Cluster, Host, Instance, ServerGroup
from consolidator.store.bulk import insert_many
from consolidator.store.db import resolve_id, translate_errors
from consolidator.store.tables import (
    snapshot_hosts,
    snapshot_instances,
    snapshot_power,
    snapshot_server_groups,
    snapshots,
)


@dataclass(frozen=True)
class SnapshotInfo:
    """A snapshot's header row."""

    id: str
    cloud: str
    taken_at: datetime
    source: str
    capacity_source: str
    host_count: int
    instance_count: int
    #: The identity of the cloud it was read from (None: a scenario file, or unknown).
    endpoint: str | None = None

    @property
    def key(self) -> str:
        """What the cloud's lease and recorded host states are keyed by: its identity, else
        its name (as Inventory.key)."""
        return self.endpoint or self.cloud


@dataclass(frozen=True)
class Snapshot:
    """A stored snapshot: its header and the cluster it recorded."""

    info: SnapshotInfo
    cluster: Cluster
    #: The hosts' power draw read from their BMCs when it was taken (hosts without one are
    #: not listed).
    readings: tuple[Reading, ...] = ()


_HOST_COLUMNS = ("vcpus", "memory_mb", "disk_gb", "cpu_allocation_ratio",
                 "ram_allocation_ratio", "disk_allocation_ratio", "reserved_vcpus",
                 "reserved_memory_mb", "reserved_disk_gb", "availability_zone", "status",
                 "state", "power", "disabled_reason", "compute_host", "bmc", "cpu_speed")
_INSTANCE_COLUMNS = ("name", "host", "vcpus", "memory_mb", "disk_gb", "status", "project_id",
                     "flavor", "usage")


def save_snapshot(engine: Engine, cluster: Cluster, *, cloud: str, source: str,
                  capacity_source: str = "placement", taken_at: datetime | None = None,
                  readings: tuple[Reading, ...] = (), endpoint: str | None = None,
                  snapshot_id: str | None = None) -> Snapshot:
    """Store a cluster as a new snapshot in one transaction (under snapshot_id when given,
    else a new one); return it as stored."""
    info = SnapshotInfo(id=snapshot_id or str(uuid.uuid4()), cloud=cloud, endpoint=endpoint,
                        taken_at=taken_at or datetime.now(timezone.utc), source=source,
                        capacity_source=capacity_source, host_count=len(cluster.hosts),
                        instance_count=len(cluster.instances))
    with translate_errors(engine), engine.begin() as conn:
        conn.execute(snapshots.insert(), asdict(info))
        for table, rows in snapshot_rows(info.id, cluster):
            insert_many(conn, table, rows)
        if readings:
            conn.execute(snapshot_power.insert(), [
                {"snapshot_id": info.id, "host": r.host, "watts": r.watts,
                 "load": r.load, "source": r.source} for r in readings])
    return Snapshot(info=info, cluster=cluster, readings=tuple(readings))


def snapshot_rows(snapshot_id: str, cluster: Cluster) -> list[tuple[Table, list[dict]]]:
    """The host, instance and server-group rows of a snapshot, per table."""
    hosts = [{"snapshot_id": snapshot_id, "name": h.name, "position": pos, "host_id": h.id,
              **{c: getattr(h, c) for c in _HOST_COLUMNS},
              "bmc": dict(h.bmc) if h.bmc is not None else None,
              "aggregates": list(h.aggregates),
              "resources": {rc: dict(inv) for rc, inv in h.resources.items()} or None,
              "traits": list(h.traits) or None}
             for pos, h in enumerate(cluster.hosts)]
    instances = [{"snapshot_id": snapshot_id, "instance_id": i.id, "position": pos,
                  **{c: getattr(i, c) for c in _INSTANCE_COLUMNS},
                  "instance_metadata": dict(i.metadata),
                  "flavor_extra_specs": dict(i.flavor_extra_specs),
                  "resources": dict(i.resources) or None,
                  "usage": dict(i.usage) if i.usage is not None else None}
                 for pos, i in enumerate(cluster.instances)]
    groups = [{"snapshot_id": snapshot_id, "group_id": g.id, "position": pos, "name": g.name,
               "policy": g.policy, "members": list(g.members)}
              for pos, g in enumerate(cluster.server_groups)]
    return [(snapshot_hosts, hosts), (snapshot_instances, instances),
            (snapshot_server_groups, groups)]


def _info(row: object) -> SnapshotInfo:
    return SnapshotInfo(**{k: getattr(row, k) for k in SnapshotInfo.__dataclass_fields__})


def resolve_snapshot_id(engine: Engine, ref: str) -> str:
    """The full id of the snapshot named by an id or a unique prefix of one."""
    return resolve_id(engine, snapshots.c.id, ref, "snapshot")


def load_snapshot(engine: Engine, ref: str) -> Snapshot:
    """Read a snapshot (by id or unique prefix) back into a Cluster."""
    snapshot_id = resolve_snapshot_id(engine, ref)
    with translate_errors(engine), engine.connect() as conn:
        header = conn.execute(select(snapshots).where(snapshots.c.id == snapshot_id)).one()
        host_rows = conn.execute(select(snapshot_hosts)
                                 .where(snapshot_hosts.c.snapshot_id == snapshot_id)
                                 .order_by(snapshot_hosts.c.position)).all()
        inst_rows = conn.execute(select(snapshot_instances)
                                 .where(snapshot_instances.c.snapshot_id == snapshot_id)
                                 .order_by(snapshot_instances.c.position)).all()
        group_rows = conn.execute(select(snapshot_server_groups)
                                  .where(snapshot_server_groups.c.snapshot_id == snapshot_id)
                                  .order_by(snapshot_server_groups.c.position)).all()
        power_rows = conn.execute(select(snapshot_power)
                                  .where(snapshot_power.c.snapshot_id == snapshot_id)
                                  .order_by(snapshot_power.c.host)).all()
    hosts = tuple(Host(name=r.name, id=r.host_id, aggregates=tuple(r.aggregates or ()),
                       resources=r.resources or {}, traits=tuple(r.traits or ()),
                       **{c: getattr(r, c) for c in _HOST_COLUMNS if c != "cpu_speed"},
                       cpu_speed=r.cpu_speed if r.cpu_speed is not None else 1.0)
                  for r in host_rows)
    instances = tuple(Instance(id=r.instance_id, metadata=r.instance_metadata or {},
                               flavor_extra_specs=r.flavor_extra_specs or {},
                               resources=r.resources or {},
                               **{c: getattr(r, c) for c in _INSTANCE_COLUMNS})
                      for r in inst_rows)
    groups = tuple(ServerGroup(id=r.group_id, name=r.name, policy=r.policy,
                               members=tuple(r.members)) for r in group_rows)
    readings = tuple(Reading(host=r.host, watts=r.watts, load=r.load, source=r.source)
                     for r in power_rows)
    return Snapshot(info=_info(header),
                    cluster=Cluster(hosts=hosts, instances=instances, server_groups=groups),
                    readings=readings)


def list_snapshots(engine: Engine, cloud: str | None = None, limit: int = 50
                   ) -> list[SnapshotInfo]:
    """The newest snapshots first, optionally of one cloud."""
    query = select(snapshots).order_by(snapshots.c.taken_at.desc()).limit(limit)
    if cloud:
        query = query.where(snapshots.c.cloud == cloud)
    with translate_errors(engine), engine.connect() as conn:
        return [_info(r) for r in conn.execute(query)]


def _newest(cloud: str, when: ColumnElement[bool], limit: int) -> Subquery:
    """The ids of the cloud's `limit` newest snapshots taken `when`, as a derived table to
    join (MariaDB and MySQL take no LIMIT in an IN subquery)."""
    return (select(snapshots.c.id).where(snapshots.c.cloud == cloud, when)
            .order_by(snapshots.c.taken_at.desc()).limit(limit).subquery())


def usage_history(engine: Engine, cloud: str, *, before: datetime, limit: int
                  ) -> dict[str, list[dict[str, float]]]:
    """{instance id: [usage, ...]} from the cloud's `limit` newest snapshots taken before."""
    if limit <= 0:
        return {}
    recent = _newest(cloud, snapshots.c.taken_at < before, limit)
    query = (select(snapshot_instances.c.instance_id, snapshot_instances.c.usage)
             .join(recent, snapshot_instances.c.snapshot_id == recent.c.id)
             .where(snapshot_instances.c.usage.is_not(None)))
    history: dict[str, list[dict[str, float]]] = {}
    with translate_errors(engine), engine.connect() as conn:
        for instance_id, usage in conn.execute(query):
            if usage:
                history.setdefault(instance_id, []).append(usage)
    return history


def demand_samples(engine: Engine, cloud: str, *, since: datetime) -> list[DemandSample]:
    """The cloud's CPU demand in each snapshot with usage statistics taken since `since`, and
    in the newest such snapshot taken before it (the demand at the start)."""
    with_usage = (select(snapshot_instances.c.snapshot_id)
                  .where(snapshot_instances.c.usage.is_not(None)).distinct())
    base = select(snapshots.c.id, snapshots.c.taken_at).where(
        snapshots.c.cloud == cloud, snapshots.c.id.in_(with_usage.scalar_subquery()))
    with translate_errors(engine), engine.connect() as conn:
        chosen = list(conn.execute(base.where(snapshots.c.taken_at >= since)))
        chosen += list(conn.execute(base.where(snapshots.c.taken_at < since)
                                    .order_by(snapshots.c.taken_at.desc()).limit(1)))
        ids = [row.id for row in chosen]
        means: dict[str, list[float]] = {i: [] for i in ids}
        for sid, usage in conn.execute(
                select(snapshot_instances.c.snapshot_id, snapshot_instances.c.usage)
                .where(snapshot_instances.c.snapshot_id.in_(ids))):
            if usage and "cpu_mean" in usage:
                means[sid].append(float(usage["cpu_mean"]))
        vcpus: dict[str, list[int]] = {i: [] for i in ids}
        for sid, count, power in conn.execute(
                select(snapshot_hosts.c.snapshot_id, snapshot_hosts.c.vcpus,
                       snapshot_hosts.c.power).where(snapshot_hosts.c.snapshot_id.in_(ids))):
            if power != "off":
                vcpus[sid].append(count)
    return sorted((DemandSample(row.taken_at, cpu_demand(means[row.id], vcpus[row.id]))
                   for row in chosen), key=lambda s: s.taken_at)


def power_history(engine: Engine, cloud: str, *, before: datetime, limit: int
                  ) -> dict[str, list[tuple[float, float]]]:
    """{host: [(load, watts), ...]} read at the cloud's `limit` newest snapshots up to
    `before` (inclusive)."""
    if limit <= 0:
        return {}
    recent = _newest(cloud, snapshots.c.taken_at <= before, limit)
    query = (select(snapshot_power.c.host, snapshot_power.c.load, snapshot_power.c.watts)
             .join(recent, snapshot_power.c.snapshot_id == recent.c.id))
    history: dict[str, list[tuple[float, float]]] = {}
    with translate_errors(engine), engine.connect() as conn:
        for host, load, watts in conn.execute(query):
            history.setdefault(host, []).append((float(load), float(watts)))
    return history


def measured_power(engine: Engine, cloud: str) -> dict[str, tuple[float, int]]:
    """{snapshot id: (watts read in all, hosts read)} for every snapshot of the cloud."""
    query = (select(snapshot_power.c.snapshot_id, func.sum(snapshot_power.c.watts),
                    func.count())
             .join(snapshots, snapshots.c.id == snapshot_power.c.snapshot_id)
             .where(snapshots.c.cloud == cloud)
             .group_by(snapshot_power.c.snapshot_id))
    with translate_errors(engine), engine.connect() as conn:
        return {sid: (float(total), int(count)) for sid, total, count in conn.execute(query)}
