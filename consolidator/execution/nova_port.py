"""The Nova and Placement calls the executor makes, as one Protocol: the live cloud
(openstack.nova.Nova), the dry run's SimulatedNova and the trace replay's ReplayNova each
implement it, so that the executor is typed against what it uses, not one class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from consolidator.openstack.nova import ServerState
from consolidator.openstack.placement import Demand


class NovaReads(Protocol):
    """What a simulated cloud reads, once each, from the cloud beneath it."""

    @property
    def version(self) -> tuple[int, int] | None:
        """The compute API microversion in use, as (major, minor)."""
        ...

    @property
    def mv(self) -> str | None:
        """The same microversion as a string ("2.88")."""
        ...

    def server(self, server_id: str) -> ServerState | None:
        """The server's status and host, read now; None once it is gone."""
        ...

    def latest_migration(self, server_id: str) -> dict[str, Any] | None:
        """The server's newest live-migration record, or None."""
        ...

    def servers_on(self, compute_host: str) -> list[dict[str, Any]]:
        """Every server on a compute host: all projects, all states."""
        ...

    def unfinished_migrations(self, compute_host: str) -> list[dict[str, Any]]:
        """Migration records into or out of the host that are not final."""
        ...

    def services(self) -> dict[str, dict[str, Any]]:
        """The nova-compute services by host."""
        ...

    def room(self, provider: str) -> dict[str, float]:
        """A compute node provider tree's free room per resource class."""
        ...

    def placement_usage(self, provider: str) -> dict[str, float]:
        """What Placement holds on a compute node's provider tree (non-zero classes)."""
        ...


#: Called right before a write request is sent (the lease's last-moment fence): it raises
#: to send nothing.
BeforeRequest = Callable[[], None]


class NovaPort(NovaReads, Protocol):
    """Every Nova and Placement call the executor, the power path and resume make. Each write
    takes an optional before_request, called right before its request is sent (after any
    read it makes first)."""

    def live_migrate(self, server_id: str, compute_host: str, *,
                     before_request: BeforeRequest | None = None) -> None:
        """Start a live migration of the server to the compute host."""
        ...

    def migration_progress(self, server_id: str) -> dict[str, Any] | None:
        """The server's in-progress live migration with its memory counters, or None."""
        ...

    def set_service(self, compute_host: str, *, enabled: bool, reason: str | None = None,
                    before_request: BeforeRequest | None = None) -> None:
        """Enable, or disable with a reason, a host's nova-compute service."""
        ...

    def force_down(self, compute_host: str, down: bool, *,
                   before_request: BeforeRequest | None = None) -> None:
        """Mark a host's nova-compute forced down, or clear the mark."""
        ...

    def refusals(self, provider: str, arriving: list[Demand]) -> dict[str, str]:
        """Which instances arriving together on a provider Placement refuses, and why."""
        ...

    def abort_migration(self, server_id: str, migration_id: object, *,
                        before_request: BeforeRequest | None = None) -> None:
        """Abort a running live migration."""
        ...

    def force_complete(self, server_id: str, migration_id: object, *,
                       before_request: BeforeRequest | None = None) -> None:
        """Force a running live migration to complete."""
        ...
