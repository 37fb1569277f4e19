"""A simulated copy of the live cloud, for dry runs: the executor's Nova and BMC calls on a
model, the way BtrPlace applies a plan to a model.

Each piece of live state (a server, the services, a host's servers, migrations and Placement
usage, a BMC's power) is read from the real cloud once, the first time it is asked for; every
later read sees that copy with the simulated actions applied. A live migration completes at
once, a power-on brings nova-compute up at once. Nothing is ever sent to the cloud or a BMC but
reads.
"""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from consolidator.core.errors import CloudError
from consolidator.core.model import Cluster
from consolidator.execution.nova_port import BeforeRequest, NovaReads
from consolidator.openstack import placement
from consolidator.openstack.nova import ServerState
from consolidator.power.driver import POWER_OFF, POWER_ON, PowerReader, read_power

if TYPE_CHECKING:
    from consolidator.execution.executor import PowerLookup


class SimulatedNova:
    """The executor's Nova and Placement calls on a copy of the live state read once."""

    def __init__(self, real: NovaReads, cluster: Cluster) -> None:
        self.real, self.cluster = real, cluster
        self.version, self.mv = real.version, real.mv
        self._lock = threading.RLock()
        self._servers: dict[str, ServerState | None] = {}
        self._services: dict[str, dict[str, Any]] | None = None
        self._on: dict[str, list[dict[str, Any]]] = {}
        self._unfinished: dict[str, list[dict[str, Any]]] = {}
        self._room: dict[str, dict[str, float]] = {}
        self._usage: dict[str, dict[str, float]] = {}
        self._moves: list[tuple[str, str, str]] = []         # server id, source, destination
        self._records: dict[str, dict[str, Any]] = {}
        #: Free room gained per provider and class by the simulated moves.
        self._gained: dict[str, dict[str, float]] = {}
        self._ids = itertools.count(1)
        self.provider = {h.compute_host: h.id for h in cluster.hosts}
        self.traits = {h.id: set(h.traits) for h in cluster.hosts}

    # -- servers -------------------------------------------------------------------------

    def server(self, server_id: str) -> ServerState | None:
        """The server as the simulation has it."""
        with self._lock:
            if server_id not in self._servers:
                self._servers[server_id] = self.real.server(server_id)
            return self._servers[server_id]

    def live_migrate(self, server_id: str, compute_host: str, *,
                     before_request: BeforeRequest | None = None) -> None:
        """Move the server at once, with its Placement usage, and record a completed
        migration; refused as Nova would for a missing server or destination service."""
        if before_request is not None:
            before_request()
        with self._lock:
            server = self.server(server_id)
            if server is None:
                raise CloudError(f"Nova refused the live migration (HTTP 404): server "
                                 f"{server_id} not found")
            if compute_host not in self.services():
                raise CloudError(f"Nova refused the live migration (HTTP 400): compute host "
                                 f"{compute_host} not found")
            source = server.compute_host or ""
            self._servers[server_id] = ServerState(id=server_id, status="ACTIVE",
                                                   compute_host=compute_host,
                                                   node=compute_host, task_state=None)
            self._moves.append((server_id, source, compute_host))
            self._shift(server_id, source, compute_host)
            self._records[server_id] = {
                "id": next(self._ids), "status": "completed", "instance_uuid": server_id,
                "migration_type": "live-migration", "source_compute": source,
                "dest_compute": compute_host}

    def latest_migration(self, server_id: str) -> dict[str, Any] | None:
        """The simulated migration of the server, else its real newest record."""
        with self._lock:
            if server_id in self._records:
                return dict(self._records[server_id])
        return self.real.latest_migration(server_id)

    def migration_progress(self, server_id: str) -> dict[str, Any] | None:
        """No progress to show: a simulated migration ends at once."""
        return None

    def servers_on(self, compute_host: str) -> list[dict[str, Any]]:
        """The servers on a host: the real list read once, with the simulated moves."""
        with self._lock:
            if compute_host not in self._on:
                self._on[compute_host] = self.real.servers_on(compute_host)
            there = {s["id"]: s for s in self._on[compute_host]}
            for server_id, source, dest in self._moves:
                if source == compute_host:
                    there.pop(server_id, None)
                elif dest == compute_host:
                    there[server_id] = {"id": server_id, "status": "ACTIVE"}
            return list(there.values())

    def unfinished_migrations(self, compute_host: str) -> list[dict[str, Any]]:
        """The host's unfinished migrations as read once (simulated ones end at once)."""
        with self._lock:
            if compute_host not in self._unfinished:
                self._unfinished[compute_host] = self.real.unfinished_migrations(compute_host)
            return list(self._unfinished[compute_host])

    def abort_migration(self, server_id: str, migration_id: object, *,
                        before_request: BeforeRequest | None = None) -> None:
        """Nothing to abort: a simulated migration ends at once."""

    def force_complete(self, server_id: str, migration_id: object, *,
                       before_request: BeforeRequest | None = None) -> None:
        """Nothing to force: a simulated migration ends at once."""

    # -- services ------------------------------------------------------------------------

    def services(self) -> dict[str, dict[str, Any]]:
        """The nova-compute services by host, read once; one that is up heartbeats, so its
        record reads as updated just now."""
        with self._lock:   # a copy of each flat record: a caller's change stays its own
            services = {host: copy.copy(s) for host, s in self._read_services().items()}
        now = datetime.now(timezone.utc).isoformat()
        for service in services.values():
            if service.get("state") == "up" and not service.get("forced_down"):
                service["updated_at"] = now
        return services

    def _read_services(self) -> dict[str, dict[str, Any]]:
        if self._services is None:
            self._services = self.real.services()
        return self._services

    def _service(self, compute_host: str) -> dict[str, Any]:
        service = self._read_services().get(compute_host)
        if service is None:
            raise CloudError(f"no nova-compute service on host {compute_host}")
        return service

    def set_service(self, compute_host: str, *, enabled: bool, reason: str | None = None,
                    before_request: BeforeRequest | None = None) -> None:
        """Enable, or disable with a reason, a host's simulated service."""
        if before_request is not None:
            before_request()
        with self._lock:
            service = self._service(compute_host)
            service["status"] = "enabled" if enabled else "disabled"
            service["disabled_reason"] = None if enabled else (reason or "consolidator")

    def force_down(self, compute_host: str, down: bool, *,
                   before_request: BeforeRequest | None = None) -> None:
        """Set or clear the simulated service's forced_down mark."""
        if before_request is not None:
            before_request()
        with self._lock:
            self._service(compute_host)["forced_down"] = down

    def powered(self, compute_host: str, on: bool) -> None:
        """The host's power changed: nova-compute reports up (now) or down."""
        with self._lock:
            service = self._service(compute_host)
            service["state"] = "up" if on else "down"
            service["updated_at"] = datetime.now(timezone.utc).isoformat()

    # -- Placement -----------------------------------------------------------------------

    def refusals(self, provider: str, arriving: list[placement.Demand]) -> dict[str, str]:
        """Which arrivals the simulated Placement refuses: room, then traits."""
        with self._lock:
            free = self._read(self._room, provider, lambda: self.real.room(provider))
        traits = self.traits.get(provider, set())

        def offers(_resources: Mapping[str, float], required: Iterable[str],
                   forbidden: Iterable[str]) -> bool:
            return set(required) <= traits and not set(forbidden) & traits
        return placement.admit(free, arriving, offers)

    def placement_usage(self, provider: str) -> dict[str, float]:
        """What the simulated Placement holds on a provider (non-zero classes)."""
        with self._lock:
            held = self._read(self._usage, provider,
                              lambda: self.real.placement_usage(provider), negate=True)
        return {rc: n for rc, n in held.items() if abs(n) > 1e-9}

    def _read(self, cache: dict[str, dict[str, float]], provider: str, read: Any,
              negate: bool = False) -> dict[str, float]:
        """A provider's room (or usage, negated deltas) read once, with the simulated moves."""
        if provider not in cache:
            cache[provider] = dict(read())
        values = dict(cache[provider])
        for rc, delta in self._gained.get(provider, {}).items():
            values[rc] = values.get(rc, 0.0) + (-delta if negate else delta)
        return values

    def _shift(self, server_id: str, source: str, dest: str) -> None:
        """Move a server's Placement usage from its source's provider to its destination's."""
        amounts = self._amounts(server_id)
        for host, sign in ((source, 1.0), (dest, -1.0)):
            room = self._gained.setdefault(self.provider.get(host, host), {})
            for rc, n in amounts.items():
                room[rc] = room.get(rc, 0.0) + sign * n

    def _amounts(self, server_id: str) -> dict[str, float]:
        index = self.cluster.instance_index.get(server_id)
        if index is None:
            return {}
        inst = self.cluster.instances[index]
        return {rc: inst.amount(rc) for rc in self.cluster.resource_classes}


class SimulatedPower:
    """A BMC whose power is read once from the real one, then simulated."""

    def __init__(self, real: PowerReader, nova: SimulatedNova, compute_host: str) -> None:
        self.real, self.nova, self.compute_host = real, nova, compute_host
        self.host = real.host
        self.state: str | None = None

    def power_state(self) -> str:
        """The simulated power state (the real BMC's, read once)."""
        if self.state is None:
            self.state = read_power(self.real)
        return self.state

    def identity(self) -> dict[str, str]:
        """What the real BMC reports of its system (a read)."""
        return self.real.identity()

    def expected_identity(self) -> dict[str, str]:
        """What the real driver's bmc.yaml entry expects."""
        return self.real.expected_identity()

    def power_on(self, *, timeout: float = 300.0, before_request: Any = None) -> str:
        """On at once, with nova-compute up."""
        if before_request is not None:
            before_request()
        self.state = POWER_ON
        self.nova.powered(self.compute_host, True)
        return self.state

    def power_off(self, *, graceful: bool = True, timeout: float = 300.0,
                  grace: float | None = None, before_force: Any = None,
                  before_request: Any = None) -> str:
        """Off at once (the graceful request is honoured, so nothing is forced), with
        nova-compute down."""
        if before_request is not None:
            before_request()
        self.state = POWER_OFF
        self.nova.powered(self.compute_host, False)
        return self.state


def simulated_power(lookup: Callable[[str], PowerReader | None], nova: SimulatedNova
                    ) -> PowerLookup:
    """A power lookup whose drivers are simulated copies of the real ones (one per host)."""
    hosts = {h.name: h.compute_host for h in nova.cluster.hosts}
    drivers: dict[str, SimulatedPower | None] = {}

    def lookup_simulated(name: str) -> SimulatedPower | None:
        if name not in drivers:
            real = lookup(name)
            drivers[name] = None if real is None else \
                SimulatedPower(real, nova, hosts.get(name, name))
        return drivers[name]
    return lookup_simulated
