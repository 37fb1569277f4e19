"""Read a live cloud (Nova + Placement, through openstacksdk) into a Cluster.

Servers, hypervisors and services are paged as raw JSON through the SDK's authenticated
session: building SDK resource objects costs ~5 ms a server, raw pages cost ~0.1 ms. Auth,
catalog and microversion negotiation stay openstacksdk's. Only documented fields are used and
optional ones may be missing, so any conforming Nova works, not only the fake one.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from keystoneauth1 import discover
from openstack.connection import Connection
from sqlalchemy import Engine

from consolidator.cloud import HttpStatusError, cloud_errors, cloud_label, get_json, has_endpoint
from consolidator.errors import CloudError
from consolidator.model import Cluster, Host, Instance, ServerGroup
from consolidator.store.snapshots import save_snapshot
from consolidator.telemetry import PrometheusSource, fetch_usage, with_usage

LOG = logging.getLogger(__name__)

#: The newest compute microversion whose responses this module understands.
NOVA_MAX_MICROVERSION = (2, 96)
#: os-hypervisors is read at most at this microversion (see read_inventory).
HYPERVISORS_MAX_MICROVERSION = (2, 87)
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


def natural_key(name: str) -> list[Any]:
    """Sort key that orders compute-2 before compute-10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _mv_string(version: tuple[int, int] | None) -> str | None:
    return discover.version_to_string(version) if version else None


def compute_microversion(conn: Connection) -> tuple[int, int] | None:
    """The highest compute microversion both the cloud and this module understand."""
    data = conn.compute.get_endpoint_data()
    if data is None or not data.max_microversion:
        return None
    cloud_max = tuple(discover.normalize_version_number(data.max_microversion))[:2]
    return min(cloud_max, NOVA_MAX_MICROVERSION)  # type: ignore[return-value]


def paged(proxy: Any, path: str, key: str, *, microversion: str | None, limit: int | None,
          params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every item of a Nova list, following `<key>_links` next hrefs (marker as a fallback)."""
    query = dict(params or {})
    if limit:
        query["limit"] = limit
    url: str | None = f"{path}?{urlencode(query)}" if query else path
    seen: set[str] = set()
    while url and url not in seen:
        seen.add(url)
        body = get_json(proxy, url, microversion=microversion)
        items = body.get(key) or []
        yield from items
        links = body.get(f"{key}_links") or []
        url = next((link["href"] for link in links if link.get("rel") == "next"), None)
        if url is None and limit and len(items) >= limit and "id" in items[-1]:
            url = f"{path}?{urlencode({**query, 'marker': items[-1]['id']})}"


def read_inventory(conn: Connection, *, ratios: FallbackRatios | None = None,
                   page_size: int = 1000, workers: int = 8) -> Inventory:
    """Read hosts (with their aggregates), services, servers and server groups into a Cluster."""
    ratios = ratios or FallbackRatios()
    notes: list[str] = []
    with cloud_errors(conn, "negotiating the compute API version"):
        version = compute_microversion(conn)
    mv = _mv_string(version)
    with cloud_errors(conn, "checking the catalog for placement"):
        placement_present = has_endpoint(conn, "placement")
    # At 2.88 os-hypervisors drops capacity, and its detail asks every nova-compute for its
    # uptime over RPC: one powered off but not yet reported down makes the whole list fail
    # with 500 after the RPC timeout. 2.87 has every field needed, and no RPC.
    hyp_version = min(version, HYPERVISORS_MAX_MICROVERSION) if version else version
    with cloud_errors(conn, "listing hypervisors"):
        hypervisors = list(paged(
            conn.compute, "/os-hypervisors/detail", "hypervisors",
            microversion=_mv_string(hyp_version),
            limit=page_size if hyp_version and hyp_version >= (2, 33) else None))
    with cloud_errors(conn, "listing compute services"):
        services = {s.get("host"): s for s in paged(
            conn.compute, "/os-services", "services", microversion=mv, limit=None,
            params={"binary": "nova-compute"})}
    with cloud_errors(conn, "listing host aggregates"):
        aggregates = _aggregates(conn, mv, notes)
    capacity: dict[str, dict[str, Any]] = {}
    if placement_present:
        with cloud_errors(conn, "reading Placement inventories"):
            capacity = _placement_capacity(conn, hypervisors, workers)
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
    instances = _instances(servers, hosts, flavors, notes)
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
                     notes=tuple(notes))


def snapshot_cloud(engine: Engine, conn: Connection, *, ratios: FallbackRatios | None = None,
                   page_size: int = 1000, workers: int = 8,
                   telemetry: PrometheusSource | None = None) -> tuple[str, Inventory]:
    """Read the live cloud (and its CPU usage, if telemetry is set) and store it as one
    snapshot in one transaction; return its id."""
    inventory = read_inventory(conn, ratios=ratios, page_size=page_size, workers=workers)
    if telemetry is not None:
        usage = fetch_usage(telemetry)
        inventory = replace(inventory, cluster=with_usage(inventory.cluster, usage),
                            notes=inventory.notes + (
                                f"CPU usage statistics for {len(usage)} instances from "
                                f"{telemetry.url}",))
    label = cloud_label(conn)
    snapshot_id = save_snapshot(engine, inventory.cluster, cloud=label,
                                source=f"cloud:{label}",
                                capacity_source=inventory.capacity_source)
    return snapshot_id, inventory


def _placement_capacity(conn: Connection, hypervisors: list[dict[str, Any]], workers: int
                        ) -> dict[str, dict[str, Any]]:
    """hypervisor_hostname -> {'uuid', 'inventories', 'usages'} from Placement."""
    providers = {p["name"]: p["uuid"] for p in get_json(conn.placement, "/resource_providers")
                 .get("resource_providers", [])}
    wanted = {}
    for hyp in hypervisors:
        name = hyp.get("hypervisor_hostname")
        uuid = providers.get(name)
        if uuid:
            wanted[name] = uuid

    def fetch(item: tuple[str, str]) -> tuple[str, dict[str, Any]]:
        name, uuid = item
        inventories = get_json(conn.placement, f"/resource_providers/{uuid}/inventories")
        usages = get_json(conn.placement, f"/resource_providers/{uuid}/usages")
        return name, {"uuid": uuid, "inventories": inventories.get("inventories", {}),
                      "usages": usages.get("usages", {})}

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return dict(pool.map(fetch, wanted.items()))


def _resource(inventories: dict[str, Any], rc: str) -> tuple[int, int, float]:
    inv = inventories.get(rc) or {}
    return (int(inv.get("total", 0)), int(inv.get("reserved", 0)),
            float(inv.get("allocation_ratio", 1.0) or 1.0))


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
            members.setdefault(host, []).append(str(name))
    return members


def _hosts(hypervisors: list[dict[str, Any]], services: dict[str, dict[str, Any]],
           capacity: dict[str, dict[str, Any]], aggregates: dict[str, list[str]],
           ratios: FallbackRatios, notes: list[str]) -> list[Host]:
    hosts: dict[str, Host] = {}
    for hyp in hypervisors:
        name = hyp.get("hypervisor_hostname")
        if not name or name in hosts:
            continue
        svc_ref = hyp.get("service") or {}
        compute_host = svc_ref.get("host") or hyp.get("host_ip") or name
        svc = services.get(compute_host, {})
        state = hyp.get("state") or svc.get("state") or "up"
        status = hyp.get("status") or svc.get("status") or "enabled"
        common = {
            "name": name, "compute_host": compute_host,
            "availability_zone": svc.get("zone") or "nova",
            "status": status if status in ("enabled", "disabled") else "enabled",
            "state": state if state in ("up", "down") else "down",
            "power": "on" if state == "up" else "unknown",
            "disabled_reason": svc_ref.get("disabled_reason") or svc.get("disabled_reason"),
            "aggregates": tuple(aggregates.get(compute_host, ())),
        }
        placement = capacity.get(name)
        if placement is not None:
            inv = placement["inventories"]
            vcpu, mem, disk = (_resource(inv, rc) for rc in ("VCPU", "MEMORY_MB", "DISK_GB"))
            hosts[name] = Host(
                id=placement["uuid"], vcpus=vcpu[0], reserved_vcpus=vcpu[1],
                cpu_allocation_ratio=vcpu[2], memory_mb=mem[0], reserved_memory_mb=mem[1],
                ram_allocation_ratio=mem[2], disk_gb=disk[0], reserved_disk_gb=disk[1],
                disk_allocation_ratio=disk[2], **common)
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
               flavors: dict[str, dict[str, Any]], notes: list[str]) -> list[Instance]:
    names = {h.name for h in hosts}
    by_compute = {}
    for h in hosts:
        by_compute.setdefault(h.compute_host, []).append(h.name)
    out: list[Instance] = []
    skipped_hostless = 0
    skipped_unknown: set[str] = set()
    for server in servers:
        node = server.get("OS-EXT-SRV-ATTR:hypervisor_hostname")
        compute = server.get("OS-EXT-SRV-ATTR:host")
        if node not in names:
            candidates = by_compute.get(compute, [])
            node = candidates[0] if len(candidates) == 1 else None
        if server.get("status") in HOSTLESS_STATES or not (compute or node):
            skipped_hostless += 1
            continue
        if node is None:
            skipped_unknown.add(str(compute))
            continue
        flavor, vcpus, ram, disk, specs = _flavor_sizes(server, flavors)
        out.append(Instance(
            id=server["id"], name=server.get("name") or server["id"], host=node,
            vcpus=vcpus, memory_mb=ram, disk_gb=disk, status=server.get("status") or "UNKNOWN",
            metadata={str(k): str(v) for k, v in (server.get("metadata") or {}).items()},
            project_id=server.get("tenant_id") or server.get("project_id") or "",
            flavor=flavor, flavor_extra_specs=specs))
    if skipped_hostless:
        notes.append(f"{skipped_hostless} servers hold no host (shelved offloaded or never "
                     f"scheduled) and are left out")
    if skipped_unknown:
        notes.append(f"servers on unknown compute hosts are left out: "
                     f"{', '.join(sorted(skipped_unknown))}")
    return out


def _offset_paged(conn: Connection, path: str, key: str, mv: str | None,
                  params: dict[str, Any], limit: int = 1000) -> Iterator[dict[str, Any]]:
    """Every item of a Nova list that pages by limit and offset (server groups)."""
    offset = 0
    while True:
        query = urlencode({**params, "limit": limit, "offset": offset})
        items = get_json(conn.compute, f"{path}?{query}", microversion=mv).get(key) or []
        yield from items
        if len(items) < limit:
            return
        offset += len(items)


def _server_groups(conn: Connection, mv: str | None, known: set[str], notes: list[str]
                   ) -> list[ServerGroup]:
    groups: dict[str, ServerGroup] = {}
    dropped = 0
    for raw in _offset_paged(conn, "/os-server-groups", "server_groups", mv,
                             {"all_projects": "True"}):
        policy = raw.get("policy") or next(iter(raw.get("policies") or []), None)
        if policy is None or raw.get("id") in groups:
            continue
        members = tuple(m for m in raw.get("members") or [] if m in known)
        dropped += len(raw.get("members") or []) - len(members)
        groups[raw["id"]] = ServerGroup(id=raw["id"], name=raw.get("name") or raw["id"],
                                        policy=policy, members=members)
    if dropped:
        notes.append(f"{dropped} server-group members are not placed on a known host")
    return list(groups.values())
