"""Read a live cloud (Nova + Placement, through openstacksdk) into a Cluster; read-only.

Servers, hypervisors and services are paged as raw JSON through the SDK's authenticated
session: building SDK resource objects costs ~5 ms a server, raw pages cost ~0.1 ms. Auth,
catalog and microversion negotiation stay openstacksdk's. Only documented fields are used and
optional ones may be missing, so any conforming Nova works, not only the fake one.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from consolidator.core.errors import CloudError
from consolidator.core.model import (
    CLASSIC_CLASSES,
    Cluster,
    Host,
    Instance,
    ServerGroup,
    natural_key,
)
from consolidator.core.names import quoted
from consolidator.core.wording import agree, plural
from consolidator.openstack.connection import (
    HttpStatusError,
    cloud_errors,
    cloud_identity,
    cloud_label,
    compute_microversion,
    get_json,
    has_endpoint,
    mv_string,
    offset_paged,
    paged,
)
from consolidator.openstack.placement import ProviderTree, read_trees

if TYPE_CHECKING:
    from openstack.connection import Connection

LOG = logging.getLogger(__name__)

#: The newest microversion of os-hypervisors/detail that fans out no RPC to the computes.
HYPERVISORS_MICROVERSION = (2, 87)
#: Servers that hold no resources on a host.
HOSTLESS_STATES = {"SHELVED_OFFLOADED", "DELETED"}


@dataclass(frozen=True)
class FallbackRatios:
    """Allocation ratios for capacity read from os-hypervisors instead of Placement."""

    cpu: float = 16.0
    ram: float = 1.5
    disk: float = 1.0


@dataclass(frozen=True)
class Inventory:
    """A cloud's state as a Cluster, with how it was read."""

    cluster: Cluster
    capacity_source: str
    microversion: str | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: The cloud's name (its clouds.yaml entry).
    cloud: str = "default"
    #: Where it was read (connection.cloud_identity): tells two clouds of one name apart.
    endpoint: str | None = None

    @property
    def key(self) -> str:
        """What the cloud's lease and recorded host states are keyed by: its identity (where
        it was read), else its name."""
        return self.endpoint or self.cloud


def read_inventory(conn: Connection, *, ratios: FallbackRatios | None = None,
                   page_size: int = 1000, workers: int = 8) -> Inventory:
    """Read hosts (with their aggregates), services, servers and server groups into a Cluster."""
    ratios = ratios or FallbackRatios()
    notes: list[str] = []
    with cloud_errors(conn, "negotiating the compute API version"):
        version = compute_microversion(conn)
    mv = mv_string(version)
    with cloud_errors(conn, "checking the catalog for placement"):
        placement_present = has_endpoint(conn, "placement")
    # At 2.88 and later os-hypervisors/detail asks every compute for its uptime over RPC: a
    # compute that was just powered off, but is not yet marked down, makes it fail after the
    # RPC timeout. Capacity comes from Placement and service state from os-services, so the
    # detail is read at 2.87 at most, which reads the database only.
    hyp_version = min(version, HYPERVISORS_MICROVERSION) if version else None
    with cloud_errors(conn, "listing hypervisors"):
        hypervisors = list(paged(
            conn.compute, "/os-hypervisors/detail", "hypervisors",
            microversion=mv_string(hyp_version),
            limit=page_size if hyp_version and hyp_version >= (2, 33) else None))
    with cloud_errors(conn, "listing compute services"):
        services = {s["host"]: s for s in paged(
            conn.compute, "/os-services", "services", microversion=mv, limit=None,
            params={"binary": "nova-compute"}) if s.get("host")}
    with cloud_errors(conn, "listing host aggregates"):
        aggregates = _aggregates(conn, mv, notes)
    capacity: dict[str, ProviderTree] = {}
    if placement_present:
        with cloud_errors(conn, "reading Placement inventories"):
            capacity = read_trees(conn, [h["hypervisor_hostname"] for h in hypervisors
                                         if h.get("hypervisor_hostname")], workers)
    else:
        notes.append("placement is not in the catalog: capacity comes from os-hypervisors "
                     "with the configured allocation ratios")
    hosts = _hosts(hypervisors, services, capacity, aggregates, ratios, notes)
    flavors: dict[str, dict[str, Any]] = {}
    if not version or version < (2, 47):
        with cloud_errors(conn, "listing flavors"):
            flavors = {f["id"]: f for f in paged(conn.compute, "/flavors/detail", "flavors",
                                                 microversion=mv, limit=None,
                                                 params={"is_public": "None"})}
    with cloud_errors(conn, "listing servers"):
        servers = list(paged(conn.compute, "/servers/detail", "servers", microversion=mv,
                             limit=page_size, params={"all_tenants": "True"}))
    allocations = {c: a for tree in capacity.values() for c, a in tree.allocations.items()}
    instances = _instances(servers, hosts, flavors, allocations if capacity else None, notes)
    with cloud_errors(conn, "listing server groups"):
        groups = _server_groups(conn, mv, {i.id for i in instances}, notes)
    source = "placement" if capacity else "hypervisor"
    if hosts and not any(h.vcpus for h in hosts):
        raise CloudError(f"cloud {cloud_label(conn)!r}: no host reports any capacity: "
                         f"placement is {'empty' if placement_present else 'not in the catalog'}"
                         f" and os-hypervisors gives no vcpus")
    cluster = Cluster(hosts=tuple(hosts), instances=tuple(instances),
                      server_groups=tuple(groups))
    for note in notes:
        LOG.info("inventory: %s", note)
    return Inventory(cluster=cluster, capacity_source=source, microversion=mv,
                     notes=tuple(notes), cloud=cloud_label(conn),
                     endpoint=cloud_identity(conn))


def _resource(inventories: dict[str, Any], rc: str) -> tuple[int, int, float]:
    inv = inventories.get(rc) or {}
    return (int(inv.get("total", 0)), int(inv.get("reserved", 0)),
            float(inv.get("allocation_ratio", 1.0) or 1.0))


def demand_from_flavor(vcpus: int, ram: int, disk: int, specs: dict[str, str]
                       ) -> dict[str, float]:
    """What Nova's scheduler would allocate for a flavor, where it differs from its vcpus,
    ram and disk: resources:CLASS=N extra specs, and PCPU for hw:cpu_policy=dedicated."""
    out: dict[str, float] = {}
    if specs.get("hw:cpu_policy", "").lower() == "dedicated":
        out.update(PCPU=float(vcpus), VCPU=0.0)
    for key, value in specs.items():
        if key.startswith("resources:") and str(value).isdigit():
            out[key.partition(":")[2]] = float(value)
    return out


def _aggregates(conn: Connection, mv: str | None, notes: list[str]) -> dict[str, list[str]]:
    """Compute host -> names of its host aggregates; none, with a note, if Nova refuses."""
    try:
        body = get_json(conn.compute, "/os-aggregates", microversion=mv)
    except HttpStatusError as exc:
        if exc.status not in (403, 404):
            raise
        notes.append(f"host aggregates are not readable (HTTP {exc.status}: not an admin, "
                     f"or no os-aggregates API): [zones] aggregate: keys match no host")
        return {}
    members: dict[str, list[str]] = {}
    for aggregate in body.get("aggregates") or []:
        name = aggregate.get("name")
        if not name:
            continue
        for host in aggregate.get("hosts") or []:
            members.setdefault(quoted(str(host)), []).append(quoted(str(name)))
    return members


def _hosts(hypervisors: list[dict[str, Any]], services: dict[str, dict[str, Any]],
           capacity: dict[str, ProviderTree], aggregates: dict[str, list[str]],
           ratios: FallbackRatios, notes: list[str]) -> list[Host]:
    hosts: dict[str, Host] = {}
    for hyp in hypervisors:
        raw_name = hyp.get("hypervisor_hostname")
        name = quoted(str(raw_name or ""))
        if not name or name in hosts:
            continue
        svc_ref = hyp.get("service") or {}
        raw_compute = svc_ref.get("host") or hyp.get("host_ip") or raw_name
        svc = services.get(str(raw_compute), {})
        compute_host = quoted(str(raw_compute))
        state = hyp.get("state") or svc.get("state") or "up"
        status = hyp.get("status") or svc.get("status") or "enabled"
        common: dict[str, Any] = {
            "name": name, "compute_host": compute_host,
            "availability_zone": quoted(str(svc.get("zone") or "nova")),
            "status": status if status in ("enabled", "disabled") else "enabled",
            "state": state if state in ("up", "down") else "down",
            "power": "on" if state == "up" else "unknown",
            "disabled_reason": _quoted_or_none(svc_ref.get("disabled_reason")
                                               or svc.get("disabled_reason")),
            "aggregates": tuple(aggregates.get(compute_host, ())),
        }
        tree = capacity.get(str(raw_name))
        if tree is not None:
            inv = tree.inventories
            vcpu, mem, disk = (_resource(inv, rc) for rc in CLASSIC_CLASSES)
            hosts[name] = Host(
                id=tree.uuid, vcpus=vcpu[0], reserved_vcpus=vcpu[1],
                cpu_allocation_ratio=vcpu[2], memory_mb=mem[0], reserved_memory_mb=mem[1],
                ram_allocation_ratio=mem[2], disk_gb=disk[0], reserved_disk_gb=disk[1],
                disk_allocation_ratio=disk[2], traits=tuple(tree.traits),
                resources={rc: row for rc, row in inv.items() if rc not in CLASSIC_CLASSES
                           and row["total"] > 0}, **common)
        else:
            if capacity:
                notes.append(f"host {name}: no Placement resource provider; capacity from "
                             f"os-hypervisors")
            hosts[name] = Host(
                id=str(hyp.get("id", "")), vcpus=int(hyp.get("vcpus") or 0),
                memory_mb=int(hyp.get("memory_mb") or 0), disk_gb=int(hyp.get("local_gb") or 0),
                cpu_allocation_ratio=ratios.cpu, ram_allocation_ratio=ratios.ram,
                disk_allocation_ratio=ratios.disk, **common)
    return sorted(hosts.values(), key=lambda h: natural_key(h.name))


def _quoted_or_none(value: object) -> str | None:
    """A text the cloud gave, stored without control characters (core/names.py)."""
    return None if value is None or value == "" else quoted(str(value))


def _flavor_sizes(server: dict[str, Any], flavors: dict[str, dict[str, Any]]
                  ) -> tuple[str, int, int, int, dict[str, str]]:
    """(name, vcpus, ram, disk_gb claimed, extra_specs) of a server's flavor."""
    flavor = server.get("flavor") or {}
    if "vcpus" not in flavor:  # before 2.47 only {id, links}
        flavor = {**flavors.get(str(flavor.get("id")), {}), "original_name":
                  flavors.get(str(flavor.get("id")), {}).get("name", str(flavor.get("id", "")))}
    boot_from_volume = not server.get("image")
    root = 0 if boot_from_volume else int(flavor.get("disk") or 0)
    swap = flavor.get("swap") or 0
    swap_gb = math.ceil(int(swap) / 1024) if str(swap).isdigit() else 0
    disk = root + int(flavor.get("OS-FLV-EXT-DATA:ephemeral", flavor.get("ephemeral")) or 0)
    return (str(flavor.get("original_name") or flavor.get("name") or ""),
            int(flavor.get("vcpus") or 0), int(flavor.get("ram") or 0), disk + swap_gb,
            {str(k): str(v) for k, v in (flavor.get("extra_specs") or {}).items()})


def _instances(servers: list[dict[str, Any]], hosts: list[Host],
               flavors: dict[str, dict[str, Any]],
               allocations: dict[str, dict[str, float]] | None,
               notes: list[str]) -> list[Instance]:
    """The placed servers; each one's demand is its Placement allocations (every class),
    else, where Placement is absent or holds none for it, its flavor's."""
    names = {h.name for h in hosts}
    by_compute: dict[str, list[str]] = {}
    for h in hosts:
        by_compute.setdefault(h.compute_host, []).append(h.name)
    out: list[Instance] = []
    skipped_hostless = from_flavor = 0
    skipped_unknown: set[str] = set()
    for server in servers:
        node = _quoted_or_none(server.get("OS-EXT-SRV-ATTR:hypervisor_hostname"))
        compute = _quoted_or_none(server.get("OS-EXT-SRV-ATTR:host"))
        if node not in names:
            candidates = by_compute.get(compute or "", [])
            node = candidates[0] if len(candidates) == 1 else None
        if server.get("status") in HOSTLESS_STATES or not (compute or node):
            skipped_hostless += 1
            continue
        if node is None:
            skipped_unknown.add(str(compute))
            continue
        flavor, vcpus, ram, disk, specs = _flavor_sizes(server, flavors)
        held = allocations.get(server["id"]) if allocations is not None else None
        if held is None:
            from_flavor += allocations is not None
            resources = demand_from_flavor(vcpus, ram, disk, specs)
        else:
            resources = {rc: held.get(rc, 0.0) for rc in set(held) | set(CLASSIC_CLASSES)}
            if resources == {"VCPU": vcpus, "MEMORY_MB": ram, "DISK_GB": disk}:
                resources = {}   # the flavor says it all: a classic cloud costs no more
        out.append(Instance(
            id=server["id"], name=quoted(str(server.get("name") or server["id"])), host=node,
            vcpus=vcpus, memory_mb=ram, disk_gb=disk, status=server.get("status") or "UNKNOWN",
            metadata={quoted(str(k)): quoted(str(v))
                      for k, v in (server.get("metadata") or {}).items()},
            project_id=server.get("tenant_id") or server.get("project_id") or "",
            flavor=quoted(flavor), flavor_extra_specs=specs, resources=resources))
    if from_flavor:
        notes.append(f"{plural(from_flavor, 'server')} "
                     f"{agree(from_flavor, 'holds', 'hold')} no Placement allocation: "
                     f"their demand comes from their flavors")
    if allocations is None and out:
        notes.append("demand comes from the flavors (no Placement): resources:CLASS extra "
                     "specs and hw:cpu_policy=dedicated (PCPU) are honoured")
    if skipped_hostless:
        notes.append(f"{plural(skipped_hostless, 'server')} "
                     f"{agree(skipped_hostless, 'holds', 'hold')} no host (shelved offloaded "
                     f"or never scheduled) and are left out")
    if skipped_unknown:
        notes.append(f"servers on unknown compute hosts are left out: "
                     f"{', '.join(sorted(skipped_unknown))}")
    return out


def _server_groups(conn: Connection, mv: str | None, known: set[str], notes: list[str]
                   ) -> list[ServerGroup]:
    groups: dict[str, ServerGroup] = {}
    dropped = 0
    for raw in offset_paged(conn, "/os-server-groups", "server_groups", mv,
                             {"all_projects": "True"}):
        policy = raw.get("policy") or next(iter(raw.get("policies") or []), None)
        if policy is None or raw.get("id") in groups:
            continue
        members = tuple(m for m in raw.get("members") or [] if m in known)
        dropped += len(raw.get("members") or []) - len(members)
        groups[raw["id"]] = ServerGroup(id=raw["id"],
                                        name=quoted(str(raw.get("name") or raw["id"])),
                                        policy=policy, members=members)
    if dropped:
        notes.append(f"{dropped} server-group members are not placed on a known host")
    return list(groups.values())
