"""Populating the real Nova with a scenario: flavors, aggregates, groups, then servers."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from consolidator.core.model import CLASSIC_CLASSES, Cluster, Instance
from consolidator.emulators.realnova.controlplane import ControlPlane
from consolidator.emulators.realnova.progress import BootProgress

LOG = logging.getLogger(__name__)
#: Nova statuses a server reaches from ACTIVE by one action.
STATUS_ACTIONS: dict[str, dict[str, Any]] = {
    "SHUTOFF": {"os-stop": None}, "PAUSED": {"pause": None},
    "SUSPENDED": {"suspend": None}, "ERROR": {"os-resetState": {"state": "error"}}}
BOOT_TIMEOUT_S = 300.0
#: Boots of one server tried at most this often (see servers()): 3 were spent once under a
#: load of 15 on 2 cores ("Exhausted all hosts available for retrying build failures").
BOOT_ATTEMPTS = 5


class BootError(Exception):
    """A scenario server that did not become ACTIVE on its host."""


def _wait(what: str, done: Callable[[], bool], timeout: float = BOOT_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise BootError(f"timed out waiting for {what}")
        time.sleep(0.1)


def flavor_specs(inst: Instance) -> dict[str, str]:
    """The extra specs that make Nova claim the instance's resources: a pinned instance
    (all its vCPUs as PCPU) gets hw:cpu_policy=dedicated, as operators write it; any other
    class beyond VCPU, MEMORY_MB and DISK_GB becomes a resources:CLASS=N spec."""
    specs = {k: str(v) for k, v in inst.flavor_extra_specs.items()}
    pcpu, vcpu = int(inst.amount("PCPU")), int(inst.amount("VCPU"))
    if pcpu and pcpu == inst.vcpus and vcpu == 0:
        specs.setdefault("hw:cpu_policy", "dedicated")
    elif pcpu:
        specs.update({"resources:PCPU": str(pcpu), "resources:VCPU": str(vcpu)})
    for rc, amount in inst.resources.items():
        if rc not in CLASSIC_CLASSES and rc != "PCPU" and amount:
            specs[f"resources:{rc}"] = str(int(amount))
    return specs


class Booter:
    """Creates the scenario's Nova objects through Nova's own API, as an admin."""

    def __init__(self, plane: ControlPlane, cluster: Cluster, concurrency: int,
                 echo: Callable[[str], None] | None = None) -> None:
        self.echo = echo
        self.plane = plane
        self.api = plane.admin_api
        self.cluster = cluster
        self.concurrency = max(1, concurrency)
        self._flavors: dict[tuple[Any, ...], str] = {}
        self._existing = {f["name"]: f for f in self.api.get_flavors()}
        #: hypervisor name -> nova-compute service host.
        self.service_host = {h.name: h.compute_host for h in cluster.hosts}

    def run(self) -> dict[str, str]:
        """Everything; returns instance name -> Nova server id."""
        self.aggregates()
        groups = self.server_groups()
        ids = self.servers(groups)
        self.statuses(ids)
        self.services()
        return ids

    def flavor(self, inst: Instance) -> str:
        """The id of a flavor with the instance's size and extra specs (created once)."""
        specs = tuple(sorted(flavor_specs(inst).items()))
        key = (inst.flavor, inst.vcpus, inst.memory_mb, inst.disk_gb, specs)
        if key in self._flavors:
            return self._flavors[key]
        name = inst.flavor or f"c{inst.vcpus}-m{inst.memory_mb}-d{inst.disk_gb}"
        old = self._existing.get(name)
        if old and (old["vcpus"], old["ram"], old["disk"]) == key[1:4] and not specs:
            self._flavors[key] = old["id"]
            return old["id"]
        if old or name in {n for n in self._existing}:
            name = f"{name}-{len(self._flavors) + 1}"
        flavor = self.api.post_flavor({"flavor": {
            "name": name, "vcpus": inst.vcpus, "ram": inst.memory_mb, "disk": inst.disk_gb}})
        if specs:
            self.api.post_extra_spec(flavor["id"], {"extra_specs": dict(specs)})
        self._existing[name] = flavor
        self._flavors[key] = flavor["id"]
        return flavor["id"]

    def aggregates(self) -> None:
        """Availability zones and named aggregates of the scenario's hosts."""
        zones: dict[str, list[str]] = {}
        named: dict[str, list[str]] = {}
        for host in self.cluster.hosts:
            if host.availability_zone and host.availability_zone != "nova":
                zones.setdefault(host.availability_zone, []).append(host.compute_host)
            for agg in host.aggregates:
                named.setdefault(agg, []).append(host.compute_host)
        for zone, hosts in zones.items():
            self._aggregate(f"az-{zone}", hosts, zone)
        for name, hosts in named.items():
            self._aggregate(name, hosts, None)

    def _aggregate(self, name: str, hosts: list[str], zone: str | None) -> None:
        body: dict[str, Any] = {"name": name}
        if zone:
            body["availability_zone"] = zone
        agg = self.api.post_aggregate({"aggregate": body})
        for host in hosts:
            self.api.add_host_to_aggregate(agg["id"], host)

    def server_groups(self) -> dict[str, str]:
        """instance id (the scenario's) -> Nova server group id."""
        members: dict[str, str] = {}
        for group in self.cluster.server_groups:
            made = self.api.post_server_groups({"name": group.name, "policy": group.policy})
            for member in group.members:
                members[member] = made["id"]
        return members

    def _post(self, inst: Instance, groups: dict[str, str]) -> str:
        body = self.plane._build_server(
            name=inst.name, image_uuid=self.plane.glance.image1["id"],
            flavor_id=self.flavor(inst), networks="none", host=self.service_host[inst.host])
        if inst.metadata:
            body["metadata"] = dict(inst.metadata)
        request: dict[str, Any] = {"server": body}
        if inst.id in groups:
            request["os:scheduler_hints"] = {"group": groups[inst.id]}
        return str(self.api.post_server(request)["id"])

    def servers(self, groups: dict[str, str]) -> dict[str, str]:
        """Boot every instance on its host (microversion 2.74's host=), a few at a time."""
        ids: dict[str, str] = {}
        building: dict[str, Instance] = {}
        attempts: dict[str, int] = {}
        queue = list(self.cluster.instances)
        progress = BootProgress(len(queue), self.echo) if self.echo else None
        while queue or building:
            while queue and len(building) < self.concurrency:
                inst = queue.pop(0)
                building[self._post(inst, groups)] = inst
            time.sleep(0.1)
            for server_id, inst in list(building.items()):
                server = self.api.get_server(server_id)
                if server["status"] == "BUILD":
                    continue
                del building[server_id]
                host = server.get("OS-EXT-SRV-ATTR:host")
                if server["status"] == "ACTIVE" and host == self.service_host[inst.host]:
                    ids[inst.name] = server_id
                    if progress is not None:
                        progress(len(ids))
                    continue
                fault = (server.get("fault") or {}).get("message")
                attempts[inst.name] = attempts.get(inst.name, 1) + 1
                if attempts[inst.name] > BOOT_ATTEMPTS:
                    raise BootError(f"server {inst.name} ended {server['status']} on "
                                    f"{host} (wanted ACTIVE on {inst.host}): {fault}")
                # Concurrent boots on in-memory SQLite now and then fail with "Can't upgrade
                # a READER transaction to a WRITER mid-transaction": try again.
                LOG.warning("boot of %s failed (%s); trying again", inst.name, fault)
                self.api.delete_server(server_id)
                queue.append(inst)
        return ids

    def statuses(self, ids: dict[str, str]) -> None:
        """Stop, pause, suspend or fail the servers whose scenario status says so."""
        for inst in self.cluster.instances:
            action = STATUS_ACTIONS.get(inst.status.upper())
            if action is None:
                continue
            server_id = ids[inst.name]
            self.api.post_server_action(server_id, action)
            wanted = inst.status.upper()
            _wait(f"{inst.name} to become {wanted}", partial(self._has_status, server_id, wanted))

    def _has_status(self, server_id: str, wanted: str) -> bool:
        return bool(self.api.get_server(server_id)["status"] == wanted)

    def services(self) -> None:
        """Disable the nova-compute services the scenario says are disabled."""
        for host in self.cluster.hosts:
            if host.status != "disabled":
                continue
            service = self.api.get_services(binary="nova-compute", host=host.compute_host)[0]
            self.api.put_service(service["id"], {
                "status": "disabled",
                "disabled_reason": host.disabled_reason or "disabled in the scenario"})
