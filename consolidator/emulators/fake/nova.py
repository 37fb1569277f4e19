"""Nova for the fake cloud: version documents, servers and live migration."""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from consolidator.core.model import Instance, stable_uuid
from consolidator.emulators.fake import migration
from consolidator.emulators.fake.faults import Faults
from consolidator.emulators.fake.microversion import format_version, negotiator
from consolidator.emulators.fake.nova_common import (
    error_body,
    host_ip,
    is_true,
    iso_z,
    links_for,
    page,
)
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router, Service
from consolidator.emulators.fake.state import CREATED, CloudState, Flavor, ServerRecord

MIN_VERSION = (2, 1)
IMAGE_ID = stable_uuid("image", "cirros")
LAUNCHED = "2026-01-01T00:00:00.000000"


@dataclass
class NovaSettings:
    """What shapes the fake Nova's behaviour."""

    max_version: tuple[int, int]
    bandwidth_mb_s: float
    queue_seconds: float


class Nova:
    """The compute API over a CloudState."""

    def __init__(self, state: CloudState, faults: Faults, settings: NovaSettings) -> None:
        self.state = state
        self.faults = faults
        self.settings = settings

    def register(self, router: Router) -> None:
        """Add Nova's version documents, server, flavor and action routes."""
        prepare, finish = negotiator("compute", MIN_VERSION, self.settings.max_version,
                                     "X-OpenStack-Nova-API-Version")
        router.add_service(Service("compute", error_body, prepare, finish), "/compute")
        add = router.add
        add("GET", "/compute", self.versions, service="compute", auth=False)
        add("GET", "/compute/v2.1", self.version, service="compute", auth=False)
        v = "/compute/v2.1"
        add("GET", f"{v}/servers", self.list_servers, service="compute")
        add("GET", f"{v}/servers/detail", self.list_servers_detail, service="compute")
        add("POST", f"{v}/servers", self.create_server, service="compute")
        add("GET", f"{v}/servers/{{id}}", self.show_server, service="compute")
        add("POST", f"{v}/servers/{{id}}/action", self.server_action, service="compute")
        add("GET", f"{v}/servers/{{id}}/migrations", self.server_migrations, service="compute")
        add("GET", f"{v}/servers/{{id}}/migrations/{{mid}}", self.server_migration,
            service="compute")
        add("DELETE", f"{v}/servers/{{id}}/migrations/{{mid}}", self.abort_migration,
            service="compute")
        add("POST", f"{v}/servers/{{id}}/migrations/{{mid}}/action", self.migration_action,
            service="compute")

    # -- version documents -------------------------------------------------------------

    def _version_doc(self, req: Request) -> dict[str, Any]:
        return {"id": "v2.1", "status": "CURRENT",
                "version": format_version(self.settings.max_version),
                "min_version": format_version(MIN_VERSION), "updated": "2013-07-23T11:33:21Z",
                "links": [{"rel": "self", "href": f"{req.base_url}/compute/v2.1/"},
                          {"rel": "describedby", "type": "text/html",
                           "href": "http://docs.openstack.org/"}],
                "media-types": [{"base": "application/json",
                                 "type": "application/vnd.openstack.compute+json;version=2.1"}]}

    def versions(self, req: Request) -> Response:
        """GET /compute/: the versions document."""
        return Response(200, {"versions": [self._version_doc(req)]})

    def version(self, req: Request) -> Response:
        """GET /compute/v2.1: the v2.1 version document."""
        return Response(200, {"version": self._version_doc(req)})

    # -- servers -----------------------------------------------------------------------

    def _servers(self, req: Request, detail: bool) -> Response:
        state = self.state
        with state.locked() as now:
            all_tenants = "all_tenants" in req.query and is_true(req.arg("all_tenants"))
            host_arg = req.arg("host")
            items: Sequence[ServerRecord]
            if host_arg is not None:
                rec = state.by_compute_host.get(host_arg)
                items = sorted((state.servers[i] for i in rec.servers),
                               key=lambda s: s.position) if rec else []
            else:
                items = state.server_list
            if not all_tenants or req.arg("project_id") or req.arg("tenant_id"):
                project = (req.arg("project_id") or req.arg("tenant_id")
                           if all_tenants else state.project_id)
                items = [s for s in items if s.project_id == project]
            items = self._filter(req, items)
            positions = [s.position for s in items]

            def position(marker: str) -> int | None:
                found = state.servers.get(marker)
                if found is None:
                    return None
                at = bisect.bisect_left(positions, found.position)
                return at if at < len(positions) and positions[at] == found.position else \
                    at - 1

            path = "/compute/v2.1/servers" + ("/detail" if detail else "")
            chunk, next_href = page(req, items, lambda s: s.id, path, position)
            body: dict[str, Any] = {"servers": [
                self.server_view(req, s, now) if detail else
                {"id": s.id, "name": s.name, "links": links_for(req, "servers", s.id)}
                for s in chunk]}
        if next_href:
            body["servers_links"] = [{"rel": "next", "href": next_href}]
        return Response(200, body)

    @staticmethod
    def _filter(req: Request, items: Sequence[ServerRecord]) -> Sequence[ServerRecord]:
        """Nova's filters: status exactly; name and node as regular expressions (Nova's
        REGEXP, Python's re.search on SQLite); changes-since and, from 2.66,
        changes-before on the time each server was last updated."""
        status = req.arg("status")
        name = _regex(req, "name")
        node = _regex(req, "node")
        since = _stamp(req, "changes-since")
        before = _stamp(req, "changes-before") if req.microversion >= (2, 66) else None
        if since is not None and before is not None and before < since:
            raise HTTPError(400, "The value of changes-since must be less than or equal to "
                                 "changes-before.")
        if status:
            items = [s for s in items if s.status == status.upper()]
        if name:
            items = [s for s in items if name.search(s.name)]
        if node:
            items = [s for s in items if node.search(s.host)]
        if since is not None:
            items = [s for s in items if _updated(s) >= since]
        if before is not None:
            items = [s for s in items if _updated(s) <= before]
        return items

    def list_servers(self, req: Request) -> Response:
        """GET /servers."""
        return self._servers(req, detail=False)

    def list_servers_detail(self, req: Request) -> Response:
        """GET /servers/detail."""
        return self._servers(req, detail=True)

    def show_server(self, req: Request) -> Response:
        """GET /servers/{id}."""
        with self.state.locked() as now:
            server = self._server_or_404(req.params["id"])
            view = self.server_view(req, server, now)
            if req.microversion >= (2, 71):
                view["server_groups"] = [g.id for g in self.state.groups_of.get(server.id, ())]
        return Response(200, {"server": view})

    def _server_or_404(self, server_id: str) -> ServerRecord:
        server = self.state.servers.get(server_id)
        if server is None:
            raise HTTPError(404, f"Instance {server_id} could not be found.")
        return server

    def server_view(self, req: Request, s: ServerRecord, now: float) -> dict[str, Any]:
        """The detailed view of a server at the request's microversion."""
        mv = req.microversion
        host = self.state.hosts[s.host]
        p = s.position + 2
        view: dict[str, Any] = {
            "id": s.id, "name": s.name, "status": s.status, "tenant_id": s.project_id,
            "user_id": s.user_id, "metadata": dict(s.model.metadata),
            "hostId": hashlib.sha224((s.project_id + host.compute_host).encode()).hexdigest(),
            "image": {"id": IMAGE_ID, "links": [
                {"rel": "bookmark", "href": f"{req.base_url}/compute/images/{IMAGE_ID}"}]},
            "flavor": self.flavor_ref(req, s.flavor), "created": CREATED,
            "updated": iso_z(s.updated),
            "addresses": {"private": [{
                "version": 4, "addr": f"10.{(p >> 16) & 255}.{(p >> 8) & 255}.{p & 255}",
                "OS-EXT-IPS:type": "fixed",
                "OS-EXT-IPS-MAC:mac_addr": f"fa:16:3e:{(p >> 16) & 255:02x}:"
                                           f"{(p >> 8) & 255:02x}:{p & 255:02x}"}]},
            "accessIPv4": "", "accessIPv6": "", "links": links_for(req, "servers", s.id),
            "OS-DCF:diskConfig": "MANUAL", "progress": 0, "config_drive": "", "key_name": None,
            "OS-EXT-AZ:availability_zone": host.model.availability_zone,
            "OS-SRV-USG:launched_at": LAUNCHED, "OS-SRV-USG:terminated_at": None,
            "OS-EXT-SRV-ATTR:host": host.compute_host,
            "OS-EXT-SRV-ATTR:hypervisor_hostname": host.name,
            "OS-EXT-SRV-ATTR:instance_name": f"instance-{s.position + 1:08x}",
            "OS-EXT-STS:vm_state": s.vm_state, "OS-EXT-STS:task_state": s.task_state,
            "OS-EXT-STS:power_state": s.power_state,
            "os-extended-volumes:volumes_attached": [], "security_groups": [{"name": "default"}],
        }
        if mv >= (2, 3):
            view.update({"OS-EXT-SRV-ATTR:reservation_id": f"r-{s.id[:8]}",
                         "OS-EXT-SRV-ATTR:launch_index": 0,
                         "OS-EXT-SRV-ATTR:hostname": s.name.lower().replace("_", "-"),
                         "OS-EXT-SRV-ATTR:kernel_id": "", "OS-EXT-SRV-ATTR:ramdisk_id": "",
                         "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
                         "OS-EXT-SRV-ATTR:user_data": None})
        if mv >= (2, 9):
            view["locked"] = False
        if mv >= (2, 16):
            state = self.state.service_state(host, now)
            view["host_status"] = ("DOWN" if state == "down" else
                                   "MAINTENANCE" if host.status == "disabled" else "UP")
        if mv >= (2, 19):
            view["description"] = None
        if mv >= (2, 26):
            view["tags"] = []
        if mv >= (2, 63):
            view["trusted_image_certificates"] = None
        if mv >= (2, 73):
            view["locked_reason"] = None
        if mv >= (2, 96):
            view["pinned_availability_zone"] = None
        if s.status == "ERROR":
            view["fault"] = {"code": 500, "created": CREATED, "message": "Injected error state"}
        return view

    def flavor_ref(self, req: Request, flavor: Flavor) -> dict[str, Any]:
        """The server's flavor: embedded from 2.47, an id and link before."""
        if req.microversion >= (2, 47):
            return {"vcpus": flavor.vcpus, "ram": flavor.ram, "disk": flavor.disk,
                    "ephemeral": 0, "swap": 0, "original_name": flavor.name,
                    "extra_specs": dict(flavor.extra_specs)}
        return {"id": flavor.id, "links": [
            {"rel": "bookmark", "href": f"{req.base_url}/compute/flavors/{flavor.id}"}]}

    def create_server(self, req: Request) -> Response:
        """POST /servers: boot a server, ACTIVE at once. Its host is the scheduler's pick, or
        the one asked for: `host` (2.74; the scheduler's checks apply: enabled, up, room) or
        availability_zone "AZ:HOST" (a forced host: no scheduler check, so a disabled host
        takes it too; Placement's claim still needs room, and its nova-compute must be up).
        A refusal answers 400 at once (real Nova answers 202 and leaves the server in ERROR)."""
        body = req.json()
        spec = body.get("server") if isinstance(body, dict) else None
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) \
                or not spec["name"]:
            raise HTTPError(400, "Invalid input for field/attribute server: 'name' is a "
                                 "required property")
        zone, host = spec.get("availability_zone"), spec.get("host")
        if host is not None and req.microversion < (2, 74):
            raise HTTPError(400, "Additional properties are not allowed ('host' was "
                                 "unexpected)")
        forced = isinstance(zone, str) and ":" in zone
        if forced:
            host = str(zone).split(":", 1)[1] or None
        with self.state.locked() as now:
            flavor = next((f for f in self.state.flavors.values()
                           if f.id == spec.get("flavorRef") or f.name == spec.get("flavorRef")),
                          None)
            if flavor is None:
                raise HTTPError(400, f"Flavor {spec.get('flavorRef')} could not be found.")
            inst = Instance(name=spec["name"], host="", vcpus=flavor.vcpus,
                            memory_mb=flavor.ram, disk_gb=flavor.disk, flavor=flavor.name,
                            flavor_extra_specs=dict(flavor.extra_specs),
                            metadata={str(k): str(v)
                                      for k, v in (spec.get("metadata") or {}).items()},
                            id=stable_uuid("instance", f"{spec['name']}:{len(self.state.servers)}"
                                           f":{len(self.state.server_list)}"))
            probe = ServerRecord(model=inst, position=-1, host="", status="BUILD",
                                 vm_state="building", task_state=None, power_state=0,
                                 flavor=flavor, project_id=self.state.project_id,
                                 user_id=self.state.user_id, classes=self.state.classes)
            if host is None:
                dest = migration.pick_host(self.state, probe, now)
            else:
                dest = self.state.by_compute_host.get(host) or self.state.hosts.get(host)
                if dest is None:
                    raise HTTPError(400, f"Compute host {host} could not be found.")
                problem = migration.destination_problem(self.state, probe, dest, now,
                                                        forced=forced)
                if problem is not None:
                    raise HTTPError(400, problem)
            if dest is None:
                raise HTTPError(400, "No valid host was found. There are not enough hosts "
                                     "available.")
            rec = self.state.add_server(dataclasses.replace(inst, host=dest.name))
            view = {"id": rec.id, "links": links_for(req, "servers", rec.id),
                    "OS-DCF:diskConfig": "MANUAL", "security_groups": [{"name": "default"}],
                    "adminPass": "fake-admin-pass"}
        return Response(202, {"server": view})

    # -- actions and server migrations -------------------------------------------------

    def server_action(self, req: Request) -> Response:
        """POST /servers/{id}/action: os-migrateLive (other actions are refused)."""
        body = req.json()
        if not isinstance(body, dict) or len(body) != 1:
            raise HTTPError(400, "Invalid action body: expected exactly one action")
        action, args = next(iter(body.items()))
        if action != "os-migrateLive":
            with self.state.locked():
                self._server_or_404(req.params["id"])
            raise HTTPError(400, f"There is no such action: {action}")
        if not isinstance(args, dict):
            raise HTTPError(400, "Invalid input for field/attribute os-migrateLive.")
        if req.microversion >= (2, 25) and ("block_migration" not in args
                                            or "host" not in args):
            raise HTTPError(400, "Invalid input for field/attribute os-migrateLive. "
                                 "'block_migration' and 'host' are required properties")
        if args.get("block_migration") not in (True, False, "auto"):
            raise HTTPError(400, "Invalid input for field/attribute block_migration.")
        host = args.get("host")
        server_id = req.params["id"]
        try:
            migration.live_migrate(self.state, server_id, host,
                                   force=bool(args.get("force")) and req.microversion < (2, 68),
                                   bandwidth_mb_s=self.settings.bandwidth_mb_s,
                                   queue_seconds=self.settings.queue_seconds,
                                   fault=lambda s: self.faults.migration_fault(s.id, s.name))
        except migration.MigrationRejected as exc:
            raise HTTPError(exc.status, exc.message) from None
        return Response(202)

    def migration_view(self, req: Request, mig: migration.MigrationRecord,
                       now: float | None = None) -> dict[str, Any]:
        """A migration as GET /servers/{id}/migrations shows it: the memory copied grows
        with the simulated time it has run (`now`), as libvirt's job counters do. The record
        outlives a deleted server (its memory is the record's own)."""
        source = self.state.hosts[mig.source]
        dest = self.state.hosts[mig.dest] if mig.dest else None
        total = mig.memory_mb * 1024 * 1024
        done = migration.memory_copied(mig, total, now)
        view: dict[str, Any] = {
            "id": mig.id, "server_uuid": mig.server_id, "status": mig.status,
            "source_compute": source.compute_host, "source_node": source.name,
            "dest_compute": dest.compute_host if dest else None,
            "dest_node": dest.name if dest else None,
            "dest_host": host_ip(dest.index) if dest else None,
            "created_at": mig.created_at, "updated_at": mig.updated_at,
            "memory_total_bytes": total, "memory_processed_bytes": done,
            "memory_remaining_bytes": total - done, "disk_total_bytes": 0,
            "disk_processed_bytes": 0, "disk_remaining_bytes": 0,
        }
        if req.microversion >= (2, 59):
            view["uuid"] = mig.uuid
        if req.microversion >= (2, 80):
            view.update({"user_id": mig.user_id, "project_id": mig.project_id})
        return view

    def server_migrations(self, req: Request) -> Response:
        """GET /servers/{id}/migrations (2.23+): the in-progress live migrations."""
        if req.microversion < (2, 23):
            raise HTTPError(404, "The resource could not be found.")
        with self.state.locked() as now:
            server = self._server_or_404(req.params["id"])
            views = [self.migration_view(req, m, now) for m in self.state.migrations
                     if m.server_id == server.id and m.in_progress]
        return Response(200, {"migrations": views})

    def server_migration(self, req: Request) -> Response:
        """GET /servers/{id}/migrations/{mid} (2.23+): one in-progress live migration."""
        if req.microversion < (2, 23):
            raise HTTPError(404, "The resource could not be found.")
        with self.state.locked() as now:
            server = self._server_or_404(req.params["id"])
            for mig in self.state.migrations:
                if mig.server_id == server.id and str(mig.id) == req.params["mid"]:
                    if not mig.in_progress:
                        break
                    return Response(200, {"migration": self.migration_view(req, mig, now)})
        raise HTTPError(404, f"Migration {req.params['mid']} for instance "
                             f"{req.params['id']} could not be found.")

    def _running_migration(self, req: Request, min_version: tuple[int, int]) -> Any:
        if req.microversion < min_version:
            raise HTTPError(404, "The resource could not be found.")
        server = self._server_or_404(req.params["id"])
        for mig in self.state.migrations:
            if mig.server_id == server.id and str(mig.id) == req.params["mid"]:
                if mig.status not in ("queued", "running"):
                    raise HTTPError(400, f"Migration {mig.id} state of instance {server.id} "
                                         f"is {mig.status}. Cannot abort/force-complete "
                                         f"live migration in this state.")
                return mig
        raise HTTPError(404, f"Migration {req.params['mid']} for instance "
                             f"{req.params['id']} could not be found.")

    def abort_migration(self, req: Request) -> Response:
        """DELETE /servers/{id}/migrations/{mid} (2.24+): abort a live migration."""
        with self.state.locked():
            migration.abort(self.state, self._running_migration(req, (2, 24)))
        return Response(202, None)

    def migration_action(self, req: Request) -> Response:
        """POST /servers/{id}/migrations/{mid}/action (2.22+): force_complete."""
        body = req.json() or {}
        if "force_complete" not in body:
            raise HTTPError(400, "Invalid input for field/attribute force_complete.")
        with self.state.locked():
            mig = self._running_migration(req, (2, 22))
            if mig.status != "running":
                raise HTTPError(409, f"Migration {mig.id} is not running.")
            migration.force_complete(self.state, mig)
        return Response(202, None)


def _regex(req: Request, key: str) -> re.Pattern[str] | None:
    """A query parameter Nova matches as a regular expression (400 if it is not one)."""
    value = req.arg(key)
    if not value:
        return None
    try:
        return re.compile(value)
    except re.error:
        raise HTTPError(400, f"Invalid input for query parameters {key}. Value: {value}. "
                             f"'{value}' is not a 'regex'") from None


def _stamp(req: Request, key: str) -> datetime | None:
    """A date-time query parameter as naive UTC (400 if it is not an ISO 8601 time)."""
    value = req.arg(key)
    if value is None:
        return None
    try:
        return _naive_utc(datetime.fromisoformat(value))
    except ValueError:
        raise HTTPError(400, f"Invalid input for query parameters {key}. Value: {value}. "
                             f"'{value}' is not a 'date-time'") from None


def _updated(server: ServerRecord) -> datetime:
    """When a server was last updated, as naive UTC."""
    return _naive_utc(datetime.fromisoformat(server.updated))


def _naive_utc(stamp: datetime) -> datetime:
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(timezone.utc).replace(tzinfo=None)
    return stamp
