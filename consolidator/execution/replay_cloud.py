"""The simulated cloud of a trace replay: the dry run's SimulatedNova and simulated BMCs, read
from the replay's state instead of a live cloud, so the real executor runs each cycle's plan.

Each cycle gets a fresh copy of the replay's state (a Cluster); after the run, ``settled``
gives back where every server is and each host's power and service.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from consolidator.core.model import Cluster, Host
from consolidator.execution.executor import PowerLookup
from consolidator.execution.simulated_cloud import SimulatedNova, SimulatedPower, simulated_power
from consolidator.openstack.nova import ServerState
from consolidator.power.driver import PowerReader


class ReplayReads:
    """What SimulatedNova reads from 'the real cloud': the replay's state, as Nova would
    answer. Nothing is in flight between cycles."""

    version, mv = (2, 88), "2.88"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.on: dict[str, list[dict[str, Any]]] = {h.compute_host: [] for h in cluster.hosts}
        hosts = cluster.hosts
        for inst, row in zip(cluster.instances, cluster.placement, strict=True):
            self.on[hosts[row].compute_host].append({"id": inst.id, "status": inst.status})
        self.where = {inst.id: hosts[row] for inst, row in
                      zip(cluster.instances, cluster.placement, strict=True)}

    def server(self, server_id: str) -> ServerState | None:
        """The server where the replay has it."""
        host = self.where.get(server_id)
        return None if host is None else ServerState(server_id, "ACTIVE", host.compute_host,
                                                     host.name, None)

    def latest_migration(self, server_id: str) -> dict[str, Any] | None:
        """None: earlier migrations are settled."""
        return None

    def servers_on(self, compute_host: str) -> list[dict[str, Any]]:
        """The servers on a host."""
        return list(self.on.get(compute_host, []))

    def unfinished_migrations(self, compute_host: str) -> list[dict[str, Any]]:
        """None: nothing is in flight between cycles."""
        return []

    def services(self) -> dict[str, dict[str, Any]]:
        """The nova-compute services, as the hosts' state says."""
        now = datetime.now(timezone.utc).isoformat()
        return {h.compute_host: {"id": i + 1, "host": h.compute_host, "binary": "nova-compute",
                                 "status": h.status, "state": h.state,
                                 "disabled_reason": h.disabled_reason, "forced_down": False,
                                 "updated_at": now, "zone": h.availability_zone}
                for i, h in enumerate(self.cluster.hosts)}

    def placement_usage(self, provider: str) -> dict[str, float]:
        """What the instances on a provider hold."""
        return self._used(provider)

    def room(self, provider: str) -> dict[str, float]:
        """A provider's capacity less what its instances hold."""
        host = next(h for h in self.cluster.hosts if h.id == provider)
        used = self._used(provider)
        vcpu, mem, disk = host.capacity
        return {"VCPU": vcpu - used.get("VCPU", 0.0),
                "MEMORY_MB": mem - used.get("MEMORY_MB", 0.0),
                "DISK_GB": disk - used.get("DISK_GB", 0.0)}

    def _used(self, provider: str) -> dict[str, float]:
        c = self.cluster
        rows = [i for i, row in enumerate(c.placement) if c.hosts[row].id == provider]
        return {rc: float(sum(c.instances[i].amount(rc) for i in rows))
                for rc in ("VCPU", "MEMORY_MB", "DISK_GB")}


class ReplayNova(SimulatedNova):
    """SimulatedNova over ReplayReads: Placement's room comes from the replay's state (whose
    hosts and instances have no traits)."""


class ReplayBmc:
    """A host's BMC as the replay's state has it."""

    def __init__(self, host: Host) -> None:
        self.host = host.name
        self.state = "off" if host.power == "off" else "on"

    def power_state(self) -> str:
        """On or off."""
        return self.state

    def identity(self) -> dict[str, str]:
        """The system it reaches: its own host's (a replay's entries are never mis-wired)."""
        return {"uuid": str(uuid.uuid5(uuid.NAMESPACE_DNS, self.host)),
                "hostname": self.host}

    def expected_identity(self) -> dict[str, str]:
        """Its entry names its system, so the pre-flight reads only the targets' BMCs."""
        return self.identity()


def replay_cloud(cluster: Cluster) -> tuple[ReplayNova, PowerLookup, dict[str, Any]]:
    """The executor's Nova and power lookup for one cycle, and the drivers it made."""
    nova = ReplayNova(ReplayReads(cluster), cluster)
    bmcs: dict[str, PowerReader] = {h.name: ReplayBmc(h) for h in cluster.hosts}
    made: dict[str, Any] = {}
    lookup = simulated_power(bmcs.get, nova)

    def tracked(name: str) -> Any:
        driver = lookup(name)
        made[name] = driver
        return driver
    return nova, tracked, made


def migrations_run(nova: ReplayNova, cluster: Cluster) -> list[tuple[str, str]]:
    """Every live migration the run started, in order: (server id, destination host name)."""
    by_compute = {h.compute_host: h.name for h in cluster.hosts}
    return [(server, by_compute[dest]) for server, _src, dest in nova._moves]


def settled(nova: ReplayNova, drivers: Mapping[str, SimulatedPower | None],
            cluster: Cluster) -> tuple[dict[str, str], dict[str, Host]]:
    """After a run: server id -> host name for the servers that moved, and host name -> its
    Host with the power and service the run left."""
    by_compute = {h.compute_host: h for h in cluster.hosts}
    moved = {server: by_compute[dest].name for server, _src, dest in nova._moves}
    services = nova._services or {}
    hosts: dict[str, Host] = {}
    for host in cluster.hosts:
        service = services.get(host.compute_host)
        driver = drivers.get(host.name)
        power = driver.state if driver is not None and driver.state else host.power
        if service is None and power == host.power:
            continue
        status = service["status"] if service else host.status
        hosts[host.name] = replace(
            host, power=power, state="down" if power == "off" else "up", status=status,
            disabled_reason=(service or {}).get("disabled_reason") if status == "disabled"
            else None)
    return moved, hosts
