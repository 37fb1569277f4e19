"""The fake cloud's in-memory state: hosts, servers, flavors, groups and migrations.

Everything is guarded by one lock; simulated time advances lazily on every call. No HTTP here.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from consolidator.core.energy_model import host_load
from consolidator.core.model import (
    CLASSIC_CLASSES,
    Cluster,
    Host,
    Instance,
    ServerGroup,
    stable_uuid,
)

#: Nova's vm_state and power_state for each server status the scenario may give.
VM_STATES = {"ACTIVE": ("active", 1), "SHUTOFF": ("stopped", 4), "PAUSED": ("paused", 3),
             "SUSPENDED": ("suspended", 7), "ERROR": ("error", 0), "BUILD": ("building", 0),
             "SHELVED_OFFLOADED": ("shelved_offloaded", 4), "RESCUE": ("rescued", 1)}
CREATED = "2026-01-01T00:00:00Z"


def utc_now() -> str:
    """The wall-clock time in Nova's timestamp format."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")


@dataclass
class Flavor:
    """A flavor derived from the scenario's instances."""

    id: str
    name: str
    vcpus: int
    ram: int
    disk: int
    extra_specs: dict[str, str]


@dataclass
class HostRecord:
    """One compute host: its hypervisor, nova-compute service, power and Placement usage."""

    model: Host
    index: int
    service_id: str
    status: str
    disabled_reason: str | None
    forced_down: bool
    power: str
    alive: bool
    up_at: float = 0.0
    #: When a powered-off host's nova-compute is reported down (service_down_time in Nova).
    down_at: float = 0.0
    generation: int = 1
    #: The Placement classes of `used` and of every allocation, in column order.
    classes: tuple[str, ...] = CLASSIC_CLASSES
    used: list[int] = field(default_factory=lambda: [0, 0, 0])
    allocations: dict[str, tuple[int, ...]] = field(default_factory=dict)
    servers: dict[str, None] = field(default_factory=dict)
    updated_at: str = CREATED

    @property
    def name(self) -> str:
        """The hypervisor hostname (the resource provider name)."""
        return self.model.name

    @property
    def compute_host(self) -> str:
        """The nova-compute host name (what live migration and `host=` filters use)."""
        return self.model.compute_host

    def capacity(self) -> tuple[float, ...]:
        """Placement capacity per class."""
        return self.model.capacity + tuple(self.model.capacity_of(rc)
                                           for rc in self.classes[3:])

    def max_units(self) -> tuple[float, ...]:
        """The largest single allocation per class (Nova: the total for the classic ones)."""
        m = self.model
        return (m.vcpus, m.memory_mb, m.disk_gb) + tuple(
            m.resources[rc]["max_unit"] if rc in m.resources else 0 for rc in self.classes[3:])

    def allocate(self, consumer: str, resources: tuple[int, ...]) -> None:
        """Record a Placement allocation on this provider."""
        self.allocations[consumer] = resources
        self.used = [u + r for u, r in zip(self.used, resources, strict=True)]
        self.generation += 1

    def release(self, consumer: str) -> tuple[int, ...] | None:
        """Drop a consumer's allocation; return what it held."""
        resources = self.allocations.pop(consumer, None)
        if resources is not None:
            self.used = [u - r for u, r in zip(self.used, resources, strict=True)]
            self.generation += 1
        return resources


@dataclass
class ServerRecord:
    """One Nova server."""

    model: Instance
    position: int
    host: str
    status: str
    vm_state: str
    task_state: str | None
    power_state: int
    flavor: Flavor
    project_id: str
    user_id: str
    updated: str = CREATED
    classes: tuple[str, ...] = CLASSIC_CLASSES

    @property
    def id(self) -> str:
        """The server uuid."""
        return self.model.id

    @property
    def name(self) -> str:
        """The server name."""
        return self.model.name

    @property
    def resources(self) -> tuple[int, ...]:
        """What the server claims in Placement, per class of the cloud."""
        return tuple(int(self.model.amount(rc)) for rc in self.classes)


@dataclass
class MigrationRecord:
    """One live migration, as Nova's migrations table holds it."""

    id: int
    uuid: str
    server_id: str
    source: str
    dest: str | None
    status: str
    created_at: str
    updated_at: str
    project_id: str
    user_id: str
    fault: str | None = None
    forced: bool = False
    duration: float = 0.0
    error: str | None = None
    #: Simulated time the migration started running (its memory copy advances from then).
    started: float | None = None
    #: The guest's memory (MiB): the record outlives a deleted server, as Nova's does.
    memory_mb: int = 0

    @property
    def in_progress(self) -> bool:
        """Whether Nova would list it under /servers/{id}/migrations."""
        return self.status in ("queued", "preparing", "running", "post-migrating")


#: Runs one due migration event: (state, kind, migration, simulated time).
MigrationHandler = Callable[["CloudState", str, MigrationRecord, float], None]
#: Told of each live migration when it is requested and when it starts running, under the
#: state's lock: (moment, migration) with moment 'requested' or 'started'. A test's observer.
MigrationObserver = Callable[[str, MigrationRecord], None]


class CloudState:
    """The fake cloud's state behind one lock, with a lazily advanced clock; migration
    events are run by the handler it is given (fake/migration.py's handle_event)."""

    def __init__(self, cluster: Cluster, *, project_id: str, user_id: str,
                 handle_event: MigrationHandler,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.lock = threading.RLock()
        self.clock = clock
        self._handle_event = handle_event
        self.project_id = project_id
        self.user_id = user_id
        self.hosts: dict[str, HostRecord] = {}
        self.by_compute_host: dict[str, HostRecord] = {}
        self.by_provider: dict[str, HostRecord] = {}
        self.by_service: dict[str, HostRecord] = {}
        self.servers: dict[str, ServerRecord] = {}
        self.server_list: list[ServerRecord] = []
        self.by_name: dict[str, ServerRecord] = {}
        self.flavors: dict[str, Flavor] = {}
        self.groups: tuple[ServerGroup, ...] = cluster.server_groups
        self.groups_of: dict[str, list[ServerGroup]] = {}
        self.migrations: list[MigrationRecord] = []
        self.events: list[tuple[float, int, str, MigrationRecord]] = []
        self._seq = 0
        #: Observers of live migrations (tests watch the moment each one starts).
        self.observers: list[MigrationObserver] = []
        self._usage = {i.id: i.usage for i in cluster.instances}
        self._load(cluster)

    def _load(self, cluster: Cluster) -> None:
        self.classes = cluster.resource_classes
        for i, host in enumerate(cluster.hosts):
            rec = HostRecord(model=host, index=i, service_id=stable_uuid("service", host.name),
                             status=host.status, disabled_reason=host.disabled_reason,
                             forced_down=False, power=host.power,
                             alive=host.state == "up" and host.power != "off",
                             classes=self.classes, used=[0] * len(self.classes))
            self.hosts[host.name] = rec
            self.by_compute_host[host.compute_host] = rec
            self.by_provider[host.id] = rec
            self.by_service[rec.service_id] = rec
        for position, inst in enumerate(cluster.instances):
            flavor = self._flavor_for(inst)
            status = inst.status.upper()
            vm_state, power_state = VM_STATES.get(status, ("active", 1))
            server = ServerRecord(model=inst, position=position, host=inst.host,
                                  status=status, vm_state=vm_state, task_state=None,
                                  power_state=power_state, flavor=flavor,
                                  project_id=inst.project_id or self.project_id,
                                  user_id=self.user_id, classes=self.classes)
            self.servers[inst.id] = server
            self.server_list.append(server)
            self.by_name.setdefault(inst.name, server)
            placed = self.hosts[inst.host]
            placed.servers[inst.id] = None
            placed.allocate(inst.id, server.resources)
        for host_rec in self.hosts.values():
            host_rec.generation = 1
        for group in self.groups:
            for member in group.members:
                self.groups_of.setdefault(member, []).append(group)

    def _flavor_for(self, inst: Instance) -> Flavor:
        """The flavor an instance was booted with; one per distinct name and size."""
        specs = {str(k): str(v) for k, v in inst.flavor_extra_specs.items()}
        base = inst.flavor or f"c{inst.vcpus}-m{inst.memory_mb}-d{inst.disk_gb}"
        name = base
        suffix = 1
        while name in self.flavors:
            found = self.flavors[name]
            if (found.vcpus, found.ram, found.disk, found.extra_specs) == (
                    inst.vcpus, inst.memory_mb, inst.disk_gb, specs):
                return found
            suffix += 1
            name = f"{base}-{suffix}"
        flavor = Flavor(id=stable_uuid("flavor", name), name=name, vcpus=inst.vcpus,
                        ram=inst.memory_mb, disk=inst.disk_gb, extra_specs=specs)
        self.flavors[name] = flavor
        return flavor

    @contextmanager
    def locked(self) -> Iterator[float]:
        """Hold the lock with simulated time advanced to now; yields now."""
        with self.lock:
            now = self.clock()
            self.advance(now)
            yield now

    def advance(self, now: float) -> None:
        """Run every migration event due by now, in time order."""
        while self.events and self.events[0][0] <= now:
            at, _, kind, mig = heapq.heappop(self.events)
            self._handle_event(self, kind, mig, at)

    def notify(self, moment: str, mig: MigrationRecord) -> None:
        """Tell every observer of this migration's moment (the caller holds the lock)."""
        for observer in list(self.observers):
            observer(moment, mig)

    def schedule(self, at: float, kind: str, mig: MigrationRecord) -> None:
        """Queue a migration event at simulated time `at`."""
        self._seq += 1
        heapq.heappush(self.events, (at, self._seq, kind, mig))

    # -- lookups -----------------------------------------------------------------------

    def server(self, name_or_id: str) -> ServerRecord | None:
        """A server by id, else by name."""
        return self.servers.get(name_or_id) or self.by_name.get(name_or_id)

    def host(self, name: str) -> HostRecord | None:
        """A host by hypervisor hostname, else by compute host name."""
        return self.hosts.get(name) or self.by_compute_host.get(name)

    def host_load(self, name: str) -> float:
        """The host's allocated vCPUs over its physical cores, in [0, 1] (what its BMC's
        power reading follows)."""
        rec = self._host_or_raise(name)
        return host_load(rec.model, rec.used[0])

    def service_state(self, rec: HostRecord, now: float) -> str:
        """'up' or 'down', as the servicegroup API would report it."""
        if rec.forced_down or not rec.alive or now < rec.up_at:
            return "down"
        if rec.power == "off":   # Nova notices a dead compute only after service_down_time
            return "up" if now < rec.down_at else "down"
        return "up"

    # -- power and services ------------------------------------------------------------

    def set_power(self, name: str, on: bool, up_delay: float, down_delay: float = 0.0) -> None:
        """Power a host on or off; nova-compute follows (down after down_delay, as Nova's
        service_down_time; up after up_delay)."""
        with self.locked() as now:
            rec = self._host_or_raise(name)
            if on and rec.power != "on":
                rec.power, rec.alive, rec.up_at = "on", True, now + up_delay
            elif not on:
                if rec.power != "off":
                    rec.down_at = now + down_delay
                rec.power = "off"
            rec.updated_at = utc_now()

    def update_service(self, rec: HostRecord, *, status: str | None = None,
                       disabled_reason: str | None | object = ...,
                       forced_down: bool | None = None) -> None:
        """Change a nova-compute service's status, reason or forced_down flag."""
        with self.locked():
            if status is not None:
                rec.status = status
                if status == "enabled":
                    rec.disabled_reason = None
            if disabled_reason is not ...:
                rec.disabled_reason = disabled_reason  # type: ignore[assignment]
            if forced_down is not None:
                rec.forced_down = forced_down
            rec.updated_at = utc_now()

    def add_server(self, inst: Instance) -> ServerRecord:
        """Boot a server on its host at once, ACTIVE (a test hook: no scheduler, no
        capacity check beyond what the caller chose)."""
        with self.locked():
            if inst.id in self.servers or inst.name in self.by_name:
                raise KeyError(f"server {inst.name!r} exists")
            host_rec = self._host_or_raise(inst.host)
            rec = ServerRecord(model=inst, position=len(self.server_list), host=host_rec.name,
                               status="ACTIVE", vm_state="active", task_state=None,
                               power_state=1, flavor=self._flavor_for(inst),
                               project_id=inst.project_id or self.project_id,
                               user_id=self.user_id, classes=self.classes, updated=utc_now())
            self.servers[inst.id] = rec
            self.server_list.append(rec)
            self.by_name[inst.name] = rec
            self._usage[inst.id] = inst.usage
            host_rec.servers[inst.id] = None
            host_rec.allocate(inst.id, rec.resources)
            return rec

    def remove_server(self, name_or_id: str) -> None:
        """Delete a server at once with its allocation (refused while it migrates)."""
        with self.locked():
            rec = self.server(name_or_id)
            if rec is None:
                raise KeyError(f"unknown server {name_or_id!r}")
            if any(m.server_id == rec.id and m.in_progress for m in self.migrations):
                raise ValueError(f"server {rec.name!r} is migrating")
            host_rec = self.hosts[rec.host]
            host_rec.servers.pop(rec.id, None)
            host_rec.release(rec.id)
            del self.servers[rec.id]
            self.server_list.remove(rec)
            if self.by_name.get(rec.name) is rec:
                del self.by_name[rec.name]

    def _host_or_raise(self, name: str) -> HostRecord:
        rec = self.host(name)
        if rec is None:
            raise KeyError(f"unknown host {name!r}")
        return rec

    # -- the model view ----------------------------------------------------------------

    def cluster(self) -> Cluster:
        """The live state as a Cluster, with what the API serves."""
        with self.locked() as now:
            hosts = tuple(dataclasses.replace(
                rec.model, status=rec.status, state=self.service_state(rec, now),
                power=rec.power, disabled_reason=rec.disabled_reason)
                for rec in self.hosts.values())
            instances = tuple(dataclasses.replace(
                s.model, host=s.host, status=s.status, project_id=s.project_id,
                flavor=s.flavor.name, usage=self._usage.get(s.id))
                for s in self.server_list)
        return Cluster(hosts=hosts, instances=instances, server_groups=self.groups)

    def summary(self) -> dict[str, Any]:
        """A JSON-able view of hosts, servers and migrations for the control API."""
        with self.locked() as now:
            return {
                "hosts": {rec.name: {"power": rec.power, "status": rec.status,
                                     "state": self.service_state(rec, now),
                                     "disabled_reason": rec.disabled_reason,
                                     "used": list(rec.used), "servers": len(rec.servers)}
                          for rec in self.hosts.values()},
                "servers": {s.name: {"id": s.id, "host": s.host, "status": s.status,
                                     "task_state": s.task_state} for s in self.server_list},
                "migrations": [dataclasses.asdict(m) for m in self.migrations],
            }
