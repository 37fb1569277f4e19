"""Nova's admin APIs: hypervisors, services, server groups, migrations, availability zones,
host aggregates."""

from __future__ import annotations

from typing import Any

from consolidator.core.model import stable_uuid
from consolidator.emulators.fake.aggregates import Aggregate, cloud_aggregates
from consolidator.emulators.fake.nova import Nova
from consolidator.emulators.fake.nova_common import host_ip, is_true, page
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router
from consolidator.emulators.fake.state import HostRecord, MigrationRecord, utc_now

#: The control-plane services every Nova lists besides nova-compute.
CONTROL_SERVICES = ("nova-scheduler", "nova-conductor")
CONTROLLER = "controller"
#: When every aggregate was created, in Nova's aggregate timestamp format (no zone suffix).
AGGREGATE_CREATED = "2026-01-01T00:00:00.000000"


class NovaAdmin:
    """The admin side of the compute API over the same state as Nova."""

    def __init__(self, nova: Nova) -> None:
        self.nova = nova
        self.state = nova.state

    def register(self, router: Router) -> None:
        """Add the admin routes (the compute service is registered by Nova)."""
        v = "/compute/v2.1"
        for path, handler in (
                ("/os-hypervisors", self.list_hypervisors),
                ("/os-hypervisors/detail", self.list_hypervisors_detail),
                ("/os-hypervisors/{id}", self.show_hypervisor),
                ("/os-services", self.list_services),
                ("/os-server-groups", self.list_groups),
                ("/os-server-groups/{id}", self.show_group),
                ("/os-migrations", self.list_migrations),
                ("/os-availability-zone", self.list_zones),
                ("/os-availability-zone/detail", self.list_zones_detail),
                ("/os-aggregates", self.list_aggregates)):
            router.add("GET", v + path, handler, service="compute")
        router.add("PUT", f"{v}/os-services/{{id}}", self.update_service, service="compute")

    # -- hypervisors -------------------------------------------------------------------

    def _hypervisor_id(self, req: Request, rec: HostRecord) -> Any:
        return rec.model.id if req.microversion >= (2, 53) else rec.index + 1

    def _service_id(self, req: Request, rec: HostRecord) -> Any:
        return rec.service_id if req.microversion >= (2, 53) else rec.index + 1 + len(
            CONTROL_SERVICES)

    def hypervisor_view(self, req: Request, rec: HostRecord, now: float,
                        detail: bool) -> dict[str, Any]:
        """A hypervisor at the request's microversion (no capacity fields from 2.88)."""
        view: dict[str, Any] = {
            "id": self._hypervisor_id(req, rec), "hypervisor_hostname": rec.name,
            "state": self.state.service_state(rec, now), "status": rec.status}
        if detail:
            view.update({
                "hypervisor_type": "QEMU", "hypervisor_version": 8002000,
                "host_ip": host_ip(rec.index),
                "service": {"host": rec.compute_host, "id": self._service_id(req, rec),
                            "disabled_reason": rec.disabled_reason}})
            if req.microversion >= (2, 88):
                view["uptime"] = None if rec.power == "off" else \
                    " 12:00:00 up 42 days,  1:00,  0 users,  load average: 0.10, 0.10, 0.10"
            else:
                m = rec.model
                mem_used = rec.used[1] + m.reserved_memory_mb
                disk_used = rec.used[2] + m.reserved_disk_gb
                view.update({
                    "vcpus": m.vcpus, "memory_mb": m.memory_mb, "local_gb": m.disk_gb,
                    "vcpus_used": rec.used[0], "memory_mb_used": mem_used,
                    "local_gb_used": disk_used, "free_ram_mb": m.memory_mb - mem_used,
                    "free_disk_gb": m.disk_gb - disk_used, "current_workload": 0,
                    "running_vms": len(rec.servers),
                    "disk_available_least": m.disk_gb - disk_used,
                    "cpu_info": ({"arch": "x86_64", "model": "host-model", "vendor": "Intel",
                                  "topology": {"cores": m.vcpus, "threads": 1, "sockets": 1},
                                  "features": []}
                                 if req.microversion >= (2, 28) else "{}")})
        if req.microversion >= (2, 53) and is_true(req.arg("with_servers")) and rec.servers:
            view["servers"] = [{"uuid": sid, "name": f"instance-"
                                f"{self.state.servers[sid].position + 1:08x}"}
                               for sid in rec.servers]
        return view

    def _hypervisors(self, req: Request, detail: bool) -> Response:
        with self.state.locked() as now:
            hosts = list(self.state.hosts.values())
            if detail and req.microversion >= (2, 88) and any(
                    h.power == "off" and self.state.service_state(h, now) == "up"
                    for h in hosts):
                # From 2.88 the detail asks every compute for its uptime over RPC; one that
                # is off but not yet marked down never answers.
                raise HTTPError(500, "Unexpected API Error. <class 'oslo_messaging.exceptions."
                                     "MessagingTimeout'>: Timed out waiting for a reply")
            pattern = req.arg("hypervisor_hostname_pattern")
            if pattern is not None:
                hosts = [h for h in hosts if pattern in h.name]
                if not hosts:
                    raise HTTPError(404, f"No hypervisor matching '{pattern}' could be found.")
            index = {self._hypervisor_id(req, h): i for i, h in enumerate(hosts)}
            path = "/compute/v2.1/os-hypervisors" + ("/detail" if detail else "")
            if req.microversion >= (2, 33):
                def position(marker: str) -> int | None:
                    key: Any = marker if req.microversion >= (2, 53) else _int(marker)
                    return index.get(key)

                chunk, next_href = page(req, hosts, lambda h: str(
                    self._hypervisor_id(req, h)), path, position)
            else:
                chunk, next_href = hosts, None
            body: dict[str, Any] = {"hypervisors": [
                self.hypervisor_view(req, h, now, detail) for h in chunk]}
        if next_href:
            body["hypervisors_links"] = [{"rel": "next", "href": next_href}]
        return Response(200, body)

    def list_hypervisors(self, req: Request) -> Response:
        """GET /os-hypervisors."""
        return self._hypervisors(req, detail=False)

    def list_hypervisors_detail(self, req: Request) -> Response:
        """GET /os-hypervisors/detail."""
        return self._hypervisors(req, detail=True)

    def show_hypervisor(self, req: Request) -> Response:
        """GET /os-hypervisors/{id}."""
        with self.state.locked() as now:
            for rec in self.state.hosts.values():
                if str(self._hypervisor_id(req, rec)) == req.params["id"]:
                    return Response(200, {"hypervisor": self.hypervisor_view(
                        req, rec, now, detail=True)})
        raise HTTPError(404, f"Hypervisor {req.params['id']} could not be found.")

    # -- services ----------------------------------------------------------------------

    def service_view(self, req: Request, rec: HostRecord, now: float) -> dict[str, Any]:
        """A nova-compute service."""
        state = self.state.service_state(rec, now)
        # A running nova-compute reports every report_interval, and each report updates its
        # service record: the record of one that is up and powered was updated just now.
        heartbeat = state == "up" and rec.power == "on"
        view = {"id": self._service_id(req, rec), "binary": "nova-compute",
                "host": rec.compute_host, "zone": rec.model.availability_zone,
                "status": rec.status, "state": state,
                "updated_at": utc_now() if heartbeat else rec.updated_at,
                "disabled_reason": rec.disabled_reason}
        if req.microversion >= (2, 11):
            view["forced_down"] = rec.forced_down
        return view

    def _control_views(self, req: Request) -> list[dict[str, Any]]:
        """The scheduler and conductor: always up, each heartbeat updating its record (every
        report_interval in Nova), so their updated_at is now."""
        views = []
        for i, binary in enumerate(CONTROL_SERVICES):
            view = {"id": stable_uuid("service", binary) if req.microversion >= (2, 53)
                    else i + 1, "binary": binary, "host": CONTROLLER, "zone": "internal",
                    "status": "enabled", "state": "up", "updated_at": utc_now(),
                    "disabled_reason": None}
            if req.microversion >= (2, 11):
                view["forced_down"] = False
            views.append(view)
        return views

    def list_services(self, req: Request) -> Response:
        """GET /os-services, filtered by binary and host."""
        binary, host = req.arg("binary"), req.arg("host")
        with self.state.locked() as now:
            views = self._control_views(req)
            if host is not None:
                rec = self.state.by_compute_host.get(host)
                views += [self.service_view(req, rec, now)] if rec else []
            else:
                views += [self.service_view(req, r, now) for r in self.state.hosts.values()]
        views = [v for v in views if (binary is None or v["binary"] == binary)
                 and (host is None or v["host"] == host)]
        return Response(200, {"services": views})

    def update_service(self, req: Request) -> Response:
        """PUT /os-services/{uuid} (2.53+), or /os-services/{action} before 2.53."""
        body = req.json() or {}
        if not isinstance(body, dict):
            raise HTTPError(400, "Invalid request body")
        if req.microversion < (2, 53):
            return self._legacy_update(req, req.params["id"], body)
        rec = self.state.by_service.get(req.params["id"])
        if rec is None:
            if req.params["id"] in {stable_uuid("service", b) for b in CONTROL_SERVICES}:
                raise HTTPError(400, "Updating a nova-scheduler or nova-conductor service "
                                     "is not supported. Only nova-compute services can be "
                                     "updated.")
            raise HTTPError(404, f"Service {req.params['id']} could not be found.")
        unknown = set(body) - {"status", "disabled_reason", "forced_down"}
        status = body.get("status")
        if unknown or status not in (None, "enabled", "disabled") or not body:
            raise HTTPError(400, f"Invalid input for field/attribute: {sorted(body)}")
        if "disabled_reason" in body and status != "disabled":
            raise HTTPError(400, "Specifying 'disabled_reason' with status 'enabled' is "
                                 "invalid.")
        forced = body.get("forced_down")
        if forced is not None and not isinstance(forced, bool):
            raise HTTPError(400, "Invalid input for field/attribute forced_down.")
        reason: Any = body.get("disabled_reason", ...)
        if status == "disabled" and reason is ...:
            reason = None
        self.state.update_service(rec, status=status, disabled_reason=reason,
                                  forced_down=forced)
        with self.state.locked() as now:
            return Response(200, {"service": self.service_view(req, rec, now)})

    def _legacy_update(self, req: Request, action: str, body: dict[str, Any]) -> Response:
        if action not in ("enable", "disable", "disable-log-reason", "force-down"):
            raise HTTPError(404, f"Unknown action {action}")
        host, binary = body.get("host"), body.get("binary")
        if binary != "nova-compute":
            raise HTTPError(400, f"Invalid binary {binary!r}: only nova-compute services "
                                 f"can be updated.")
        rec = self.state.by_compute_host.get(str(host))
        if rec is None:
            raise HTTPError(404, f"Host '{host}' is not mapped to any cell")
        out: dict[str, Any] = {"host": rec.compute_host, "binary": binary}
        if action == "force-down":
            if req.microversion < (2, 11) or not isinstance(body.get("forced_down"), bool):
                raise HTTPError(400, "Invalid input for field/attribute forced_down.")
            self.state.update_service(rec, forced_down=body["forced_down"])
            out["forced_down"] = body["forced_down"]
        elif action == "enable":
            self.state.update_service(rec, status="enabled")
            out["status"] = "enabled"
        else:
            reason = body.get("disabled_reason") if action == "disable-log-reason" else None
            if action == "disable-log-reason" and not reason:
                raise HTTPError(400, "Missing disabled reason field")
            self.state.update_service(rec, status="disabled", disabled_reason=reason)
            out["status"] = "disabled"
            if reason:
                out["disabled_reason"] = reason
        return Response(200, {"service": out})

    # -- server groups -----------------------------------------------------------------

    def group_view(self, req: Request, group: Any) -> dict[str, Any]:
        """A server group (policies before 2.64, policy and rules from 2.64)."""
        view: dict[str, Any] = {"id": group.id, "name": group.name,
                                "members": list(group.members),
                                "project_id": self.state.project_id}
        if req.microversion >= (2, 13):
            view["user_id"] = self.state.user_id
        if req.microversion >= (2, 64):
            view.update({"policy": group.policy, "rules": {}})
        else:
            view.update({"policies": [group.policy], "metadata": {}})
        return view

    def list_groups(self, req: Request) -> Response:
        """GET /os-server-groups (limit/offset)."""
        try:
            offset = int(req.arg("offset") or 0)
            limit = int(req.arg("limit") or 1000)
        except ValueError:
            raise HTTPError(400, "offset and limit must be integers") from None
        groups = self.state.groups[offset:offset + limit]
        return Response(200, {"server_groups": [self.group_view(req, g) for g in groups]})

    def show_group(self, req: Request) -> Response:
        """GET /os-server-groups/{id}."""
        for group in self.state.groups:
            if group.id == req.params["id"]:
                return Response(200, {"server_group": self.group_view(req, group)})
        raise HTTPError(404, f"Instance group {req.params['id']} could not be found.")

    # -- migrations --------------------------------------------------------------------

    def os_migration_view(self, req: Request, mig: MigrationRecord) -> dict[str, Any]:
        """A migration as GET /os-migrations shows it."""
        view = self.nova.migration_view(req, mig)
        for key in list(view):
            if key.startswith(("memory_", "disk_")) or key == "server_uuid":
                del view[key]
        view.update({"instance_uuid": mig.server_id, "old_instance_type_id": 1,
                     "new_instance_type_id": 1})
        if req.microversion >= (2, 23):
            view["migration_type"] = "live-migration"
            if mig.in_progress:
                view["links"] = [
                    {"rel": "self", "href": f"{req.base_url}/compute/v2.1/servers/"
                                            f"{mig.server_id}/migrations/{mig.id}"}]
        return view

    def list_migrations(self, req: Request) -> Response:
        """GET /os-migrations, newest first, with Nova's filters (and paging from 2.59)."""
        with self.state.locked():
            migs = list(reversed(self.state.migrations))
            wanted = {k: req.arg(k) for k in ("instance_uuid", "status", "migration_type",
                                              "source_compute")}
            host = req.arg("host")
            views = []
            for mig in migs:
                view = self.os_migration_view(req, mig)
                view.setdefault("migration_type", "live-migration")
                if any(v is not None and str(view.get(k)) != v for k, v in wanted.items()):
                    continue
                if host is not None and host not in (view["source_compute"],
                                                     view["dest_compute"]):
                    continue
                views.append(view)
            if req.microversion < (2, 23):
                for view in views:
                    view.pop("migration_type", None)
        next_href = None
        if req.microversion >= (2, 59):
            views, next_href = page(req, views, lambda v: v["uuid"],
                                    "/compute/v2.1/os-migrations")
        body: dict[str, Any] = {"migrations": views}
        if next_href:
            body["migrations_links"] = [{"rel": "next", "href": next_href}]
        return Response(200, body)

    # -- availability zones ------------------------------------------------------------

    def list_zones(self, req: Request) -> Response:
        """GET /os-availability-zone."""
        zones = sorted({r.model.availability_zone for r in self.state.hosts.values()})
        return Response(200, {"availabilityZoneInfo": [
            {"zoneName": z, "zoneState": {"available": True}, "hosts": None} for z in zones]})

    def list_zones_detail(self, req: Request) -> Response:
        """GET /os-availability-zone/detail: zones with their hosts and services."""
        zones: dict[str, dict[str, Any]] = {"internal": {CONTROLLER: {
            b: {"available": True, "active": True, "updated_at": utc_now()}
            for b in CONTROL_SERVICES}}}
        with self.state.locked() as now:
            for rec in self.state.hosts.values():
                zones.setdefault(rec.model.availability_zone, {})[rec.compute_host] = {
                    "nova-compute": {"available": self.state.service_state(rec, now) == "up",
                                     "active": rec.status == "enabled",
                                     "updated_at": rec.updated_at}}
        return Response(200, {"availabilityZoneInfo": [
            {"zoneName": name, "zoneState": {"available": True}, "hosts": hosts}
            for name, hosts in zones.items()]})

    # -- host aggregates ---------------------------------------------------------------

    def list_aggregates(self, req: Request) -> Response:
        """GET /os-aggregates: a zone aggregate per availability zone other than nova, then
        the scenario hosts' aggregates; members by compute host."""
        with self.state.locked():
            found = cloud_aggregates(self.state)
        return Response(200, {"aggregates": [aggregate_view(req, a) for a in found]})


def aggregate_view(req: Request, aggregate: Aggregate) -> dict[str, Any]:
    """An aggregate as Nova shows it (uuid from 2.41; a zone one with its metadata)."""
    view: dict[str, Any] = {
        "id": aggregate.id, "name": aggregate.name, "availability_zone": aggregate.zone,
        "hosts": list(aggregate.compute_hosts),
        "metadata": {"availability_zone": aggregate.zone} if aggregate.zone else {},
        "created_at": AGGREGATE_CREATED, "updated_at": None, "deleted_at": None,
        "deleted": False}
    if req.microversion >= (2, 41):
        view["uuid"] = aggregate.uuid
    return view


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
