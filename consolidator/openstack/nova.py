"""The Nova and Placement calls the executor makes, as raw requests on openstacksdk's session.

Reads are retried (consolidator.openstack.connection.get_json); the live-migration POST is sent
once and never retried, since it may already have run. Every read is fresh: nothing is cached,
because a cached ACTIVE proves nothing about where a server is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from consolidator.core.errors import CloudError
from consolidator.openstack import placement
from consolidator.openstack.connection import (
    HttpStatusError,
    cloud_errors,
    cloud_identity,
    compute_microversion,
    error_text,
    get_json,
    paged,
)

if TYPE_CHECKING:
    from openstack.connection import Connection

#: Microversion of the live-migration POST (block_migration "auto" needs 2.25; 2.30 adds force).
LIVE_MIGRATION_MICROVERSION = "2.30"
#: Migration statuses after which nothing more happens to a migration record ('finished' is
#: a resize awaiting confirmation, so it is not final).
FINAL_MIGRATION_STATUSES = frozenset({"completed", "confirmed", "reverted", "error", "failed",
                                      "cancelled", "done"})


@dataclass(frozen=True)
class ServerState:
    """Where a server is and what it is doing, from a fresh GET."""

    id: str
    status: str
    compute_host: str | None
    node: str | None
    task_state: str | None
    #: The server's metadata (where an instance is pinned) and project.
    metadata: Mapping[str, str] = field(default_factory=dict)
    project_id: str | None = None


def up_after(service: dict[str, Any], seen: str | None) -> bool:
    """Whether a service reads up in a record updated since Nova showed it as `seen` (its
    updated_at then; Nova's own clock, so no clock of ours is compared with it)."""
    if service.get("state") != "up":
        return False
    now, then = _stamp(service.get("updated_at")), _stamp(seen)
    return now is None or then is None or now > then


def _stamp(value: object) -> datetime | None:
    """A Nova timestamp as an aware datetime (naive ones are UTC), or None."""
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None
    except ValueError:
        return None
    return when if when is None or when.tzinfo else when.replace(tzinfo=timezone.utc)


def _before(before_request: Callable[[], None] | None) -> None:
    """Call a write's before_request, if it has one."""
    if before_request is not None:
        before_request()


class Nova:
    """Nova and Placement operations of one cloud."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        with cloud_errors(conn, "negotiating the compute API version"):
            version = compute_microversion(conn)
        self.version = version
        self.mv = f"{version[0]}.{version[1]}" if version else None

    @property
    def identity(self) -> str | None:
        """Which deployment this is, whatever its clouds.yaml entry is called (its Keystone
        URL and region: connection.cloud_identity); None if it cannot tell."""
        return cloud_identity(self.conn)

    def server(self, server_id: str) -> ServerState | None:
        """A server's state now, or None if it no longer exists."""
        with cloud_errors(self.conn, f"reading server {server_id}"):
            try:
                body = get_json(self.conn.compute, f"/servers/{server_id}",
                                microversion=self.mv)["server"]
            except HttpStatusError as exc:
                if exc.status == 404:
                    return None
                raise
        return ServerState(id=body["id"], status=body.get("status", ""),
                           compute_host=body.get("OS-EXT-SRV-ATTR:host"),
                           node=body.get("OS-EXT-SRV-ATTR:hypervisor_hostname"),
                           task_state=body.get("OS-EXT-STS:task_state"),
                           metadata=body.get("metadata") or {},
                           project_id=body.get("tenant_id") or body.get("project_id"))

    def live_migrate(self, server_id: str, compute_host: str, *,
                     before_request: Callable[[], None] | None = None) -> None:
        """POST os-migrateLive once; a 4xx or 5xx is a CloudError with Nova's reason.
        before_request (here and in every write below) is called right before the request
        is sent: the lease's last-moment fence, which raises to send nothing."""
        body = {"os-migrateLive": {"host": compute_host, "block_migration": "auto"}}
        _before(before_request)
        with cloud_errors(self.conn, f"live-migrating {server_id}"):
            response = self.conn.compute.post(f"/servers/{server_id}/action", json=body,
                                              microversion=LIVE_MIGRATION_MICROVERSION)
        if response.status_code >= 400:
            raise CloudError(f"Nova refused the live migration (HTTP {response.status_code}): "
                             f"{error_text(response) or 'no reason given'}")

    def latest_migration(self, server_id: str) -> dict[str, Any] | None:
        """The server's newest live-migration record, or None."""
        query = urlencode({"instance_uuid": server_id, "migration_type": "live-migration"})
        with cloud_errors(self.conn, f"reading the migrations of {server_id}"):
            records = get_json(self.conn.compute, f"/os-migrations?{query}",
                               microversion=self.mv).get("migrations") or []
        records = [r for r in records if r.get("instance_uuid", server_id) == server_id]
        return max(records, key=lambda r: (r.get("created_at") or "", r.get("id") or 0),
                   default=None)

    def migration_progress(self, server_id: str) -> dict[str, Any] | None:
        """The server's in-progress live migration with its memory_* counters
        (GET /servers/{id}/migrations, 2.23+), or None (older microversion, or none runs)."""
        if not self.version or self.version < (2, 23):
            return None
        with cloud_errors(self.conn, f"reading the progress of {server_id}'s migration"):
            records = get_json(self.conn.compute, f"/servers/{server_id}/migrations",
                               microversion=self.mv).get("migrations") or []
        return max(records, key=lambda r: r.get("id") or 0, default=None)

    def servers_on(self, compute_host: str) -> list[dict[str, Any]]:
        """Every server on a compute host: all projects, all states."""
        with cloud_errors(self.conn, f"listing the servers on {compute_host}"):
            return list(paged(self.conn.compute, "/servers/detail", "servers",
                              microversion=self.mv, limit=1000,
                              params={"all_tenants": "True", "host": compute_host}))

    def services(self) -> dict[str, dict[str, Any]]:
        """The nova-compute services by host."""
        with cloud_errors(self.conn, "listing compute services"):
            return {s.get("host"): s for s in get_json(
                self.conn.compute, "/os-services?binary=nova-compute",
                microversion=self.mv).get("services", [])}

    def set_service(self, compute_host: str, *, enabled: bool, reason: str | None = None,
                    before_request: Callable[[], None] | None = None) -> None:
        """Enable, or disable with a reason, a host's nova-compute service."""
        service = self.services().get(compute_host)
        if service is None:
            raise CloudError(f"no nova-compute service on host {compute_host}")
        doing = f"{'enabling' if enabled else 'disabling'} nova-compute on {compute_host}"
        _before(before_request)     # after the read of the services, which may be slow
        with cloud_errors(self.conn, doing):
            if self.version and self.version >= (2, 53):
                body: dict[str, Any] = {"status": "enabled" if enabled else "disabled"}
                if not enabled and reason:
                    body["disabled_reason"] = reason
                response = self.conn.compute.put(f"/os-services/{service['id']}", json=body,
                                                 microversion=self.mv)
            else:
                action = "enable" if enabled else "disable-log-reason"
                body = {"host": compute_host, "binary": "nova-compute"}
                if not enabled:
                    body["disabled_reason"] = reason or "consolidator"
                response = self.conn.compute.put(f"/os-services/{action}", json=body,
                                                 microversion=self.mv)
        if response.status_code >= 400:
            raise CloudError(f"{doing} failed (HTTP {response.status_code}): "
                             f"{error_text(response)}")

    def unfinished_migrations(self, compute_host: str) -> list[dict[str, Any]]:
        """Migration records (live, resize, evacuation) with the host as source or destination
        that are not final: a move into or out of it, or a resize still to be confirmed."""
        with cloud_errors(self.conn, f"listing the migrations of {compute_host}"):
            records = list(paged(self.conn.compute, "/os-migrations", "migrations",
                                 microversion=self.mv, limit=None,
                                 params={"host": compute_host}))
        return [r for r in records if r.get("status") not in FINAL_MIGRATION_STATUSES
                and compute_host in (r.get("source_compute"), r.get("dest_compute"))]

    def force_down(self, compute_host: str, down: bool, *,
                   before_request: Callable[[], None] | None = None) -> None:
        """Mark a host's nova-compute forced down (a fenced host), or clear the mark."""
        service = self.services().get(compute_host)
        if service is None:
            raise CloudError(f"no nova-compute service on host {compute_host}")
        doing = f"{'setting' if down else 'clearing'} forced_down of nova-compute on " \
                f"{compute_host}"
        _before(before_request)
        with cloud_errors(self.conn, doing):
            if self.version and self.version >= (2, 53):
                response = self.conn.compute.put(f"/os-services/{service['id']}",
                                                 json={"forced_down": down},
                                                 microversion=self.mv)
            else:
                response = self.conn.compute.put(
                    "/os-services/force-down", microversion="2.11",
                    json={"host": compute_host, "binary": "nova-compute", "forced_down": down})
        if response.status_code >= 400:
            raise CloudError(f"{doing} failed (HTTP {response.status_code}): "
                             f"{error_text(response)}")

    def refusals(self, provider: str, arriving: list[placement.Demand]) -> dict[str, str]:
        """Which instances arriving together on a provider Placement refuses, and why."""
        return placement.refusals(self.conn, provider, arriving)

    def placement_usage(self, provider: str) -> dict[str, float]:
        """What Placement holds on a compute node's provider tree (non-zero classes)."""
        return placement.usage(self.conn, provider)

    def room(self, provider: str) -> dict[str, float]:
        """A compute node provider tree's free room per resource class."""
        return placement.room(self.conn, provider)

    def abort_migration(self, server_id: str, migration_id: object, *,
                        before_request: Callable[[], None] | None = None) -> None:
        """DELETE /servers/{id}/migrations/{mid} (2.24): abort a running live migration."""
        _before(before_request)
        self._migration_call("DELETE", server_id, migration_id, "2.24", None,
                             f"aborting the live migration of {server_id}")

    def force_complete(self, server_id: str, migration_id: object, *,
                       before_request: Callable[[], None] | None = None) -> None:
        """POST .../migrations/{mid}/action force_complete (2.22): pause the guest and
        finish the live migration now."""
        _before(before_request)
        self._migration_call("POST", server_id, migration_id, "2.22",
                             {"force_complete": None},
                             f"forcing the live migration of {server_id} to complete")

    def _migration_call(self, method: str, server_id: str, migration_id: object, mv: str,
                        body: dict[str, Any] | None, doing: str) -> None:
        path = f"/servers/{server_id}/migrations/{migration_id}"
        with cloud_errors(self.conn, doing):
            if method == "DELETE":
                response = self.conn.compute.delete(path, microversion=mv)
            else:
                response = self.conn.compute.post(f"{path}/action", json=body, microversion=mv)
        if response.status_code >= 400:
            raise CloudError(f"{doing} failed (HTTP {response.status_code}): "
                             f"{error_text(response)}")
