"""Nova's answers about use and history: a hypervisor's uptime (below 2.88, which 'hypervisor
show' reads), the project's limits and usage, and each server's instance actions (its create,
then one live-migration action per migration record)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from consolidator.core.model import stable_uuid
from consolidator.emulators.fake.nova import LAUNCHED, Nova
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router
from consolidator.emulators.fake.state import MigrationRecord, ServerRecord

#: What a compute reports through the uptime API (the same text Nova's fake driver gives).
UPTIME = " 12:00:00 up 42 days,  3:14,  0 users,  load average: 0.10, 0.20, 0.30"
#: Quotas as the real-Nova backend sets them (unlimited cores, instances, RAM and groups).
LIMITS = {"maxTotalCores": -1, "maxTotalInstances": -1, "maxTotalKeypairs": 100,
          "maxServerMeta": 128, "maxTotalRAMSize": -1, "maxServerGroups": -1,
          "maxServerGroupMembers": -1}
#: Live-migration records in these states ended in error.
FAILED_MIGRATIONS = {"error", "failed", "cancelled"}


class NovaUsage:
    """Uptime, limits, simple tenant usage and instance actions over Nova's state."""

    def __init__(self, nova: Nova, hypervisor_view: Any) -> None:
        self.nova = nova
        self.state = nova.state
        #: (request, host record, now, detail) -> the hypervisor's view (NovaAdmin's).
        self.hypervisor_view = hypervisor_view

    def register(self, router: Router) -> None:
        """Add the routes (the compute service is registered by Nova)."""
        v = "/compute/v2.1"
        for path, handler in (
                ("/os-hypervisors/{id}/uptime", self.uptime),
                ("/limits", self.limits),
                ("/os-simple-tenant-usage", self.usages),
                ("/os-simple-tenant-usage/{tenant}", self.usage),
                ("/servers/{id}/os-instance-actions", self.actions),
                ("/servers/{id}/os-instance-actions/{request_id}", self.action)):
            router.add("GET", v + path, handler, service="compute")

    def uptime(self, req: Request) -> Response:
        """GET /os-hypervisors/{id}/uptime: 404 from 2.88, where it went into the show."""
        if req.microversion >= (2, 88):
            raise HTTPError(404, "The resource could not be found.")
        with self.state.locked() as now:
            for rec in self.state.hosts.values():
                view = self.hypervisor_view(req, rec, now, False)
                if str(view["id"]) == req.params["id"]:
                    view["uptime"] = None if rec.power == "off" else UPTIME
                    return Response(200, {"hypervisor": view})
        raise HTTPError(404, f"Hypervisor {req.params['id']} could not be found.")

    def _project(self, req: Request) -> str:
        return req.arg("tenant_id") or self.state.project_id

    def limits(self, req: Request) -> Response:
        """GET /limits[?tenant_id=]: the quotas and what the project uses of them."""
        project = self._project(req)
        with self.state.locked():
            mine = [s for s in self.state.servers.values() if s.project_id == project]
            groups = [g for g in self.state.groups
                      if any(self.state.servers[m].project_id == project for m in g.members
                             if m in self.state.servers)]
            used = {"totalRAMUsed": sum(s.flavor.ram for s in mine),
                    "totalCoresUsed": sum(s.flavor.vcpus for s in mine),
                    "totalInstancesUsed": len(mine), "totalServerGroupsUsed": len(groups)}
        return Response(200, {"limits": {"rate": [], "absolute": {
            **LIMITS, **_proxy_limits(req), **used}}})

    def _usage(self, req: Request, servers: list[ServerRecord], project: str,
               detailed: bool) -> dict[str, Any]:
        start, stop = _window(req)
        launched = datetime.fromisoformat(LAUNCHED)
        hours = max((stop - max(start, launched)).total_seconds(), 0) / 3600
        rows: list[dict[str, Any]] = [{"hours": hours, "flavor": s.flavor.name, "instance_id": s.id,
                 "name": s.name, "tenant_id": project, "memory_mb": s.flavor.ram,
                 "local_gb": s.flavor.disk, "vcpus": s.flavor.vcpus,
                 "started_at": LAUNCHED, "ended_at": None, "state": s.vm_state,
                 "uptime": int(hours * 3600)} for s in servers]
        body: dict[str, Any] = {
            "tenant_id": project, "start": start.isoformat(), "stop": stop.isoformat(),
            "total_hours": hours * len(rows),
            "total_vcpus_usage": sum(r["vcpus"] * hours for r in rows),
            "total_memory_mb_usage": sum(r["memory_mb"] * hours for r in rows),
            "total_local_gb_usage": sum(r["local_gb"] * hours for r in rows)}
        if detailed:
            body["server_usages"] = rows
        return body

    def usages(self, req: Request) -> Response:
        """GET /os-simple-tenant-usage: every project's usage over start..end."""
        detailed = req.arg("detailed") in ("1", "True", "true")
        with self.state.locked():
            projects: dict[str, list[ServerRecord]] = {}
            for server in self.state.server_list:
                projects.setdefault(server.project_id, []).append(server)
            body = [self._usage(req, servers, project, detailed)
                    for project, servers in projects.items()]
        return Response(200, {"tenant_usages": body})

    def usage(self, req: Request) -> Response:
        """GET /os-simple-tenant-usage/{tenant}: one project's usage (detailed)."""
        project = req.params["tenant"]
        with self.state.locked():
            servers = [s for s in self.state.server_list if s.project_id == project]
            body = self._usage(req, servers, project, True) if servers else {}
        return Response(200, {"tenant_usage": body})

    def _actions(self, server: ServerRecord) -> list[dict[str, Any]]:
        """The server's actions, newest first, each with its events."""
        created = {"action": "create", "instance_uuid": server.id,
                   "request_id": _request_id("create", server.id),
                   "user_id": server.user_id, "project_id": server.project_id,
                   "start_time": LAUNCHED, "message": None, "updated_at": LAUNCHED,
                   "events": [_event("compute__do_build_and_run_instance", LAUNCHED,
                                     LAUNCHED, "Success", server.model.host)]}
        out = [created]
        for mig in self.state.migrations:
            if mig.server_id == server.id:
                out.append(_migration_action(server, mig))
        return list(reversed(out))

    def actions(self, req: Request) -> Response:
        """GET /servers/{id}/os-instance-actions."""
        with self.state.locked():
            server = self.nova._server_or_404(req.params["id"])
            found = self._actions(server)
        return Response(200, {"instanceActions": [
            {k: v for k, v in a.items() if k != "events"} for a in found]})

    def action(self, req: Request) -> Response:
        """GET /servers/{id}/os-instance-actions/{request_id}, with its events."""
        with self.state.locked():
            server = self.nova._server_or_404(req.params["id"])
            for found in self._actions(server):
                if found["request_id"] == req.params["request_id"]:
                    return Response(200, {"instanceAction": found})
        raise HTTPError(404, f"Action {req.params['request_id']} not found")


def _proxy_limits(req: Request) -> dict[str, int]:
    """The limits Nova still shows below the microversions that dropped them: network
    proxies before 2.36, image metadata before 2.39, personality files before 2.57."""
    out: dict[str, int] = {}
    if req.microversion < (2, 36):
        out.update(maxTotalFloatingIps=-1, maxSecurityGroups=-1, maxSecurityGroupRules=-1,
                   totalFloatingIpsUsed=0, totalSecurityGroupsUsed=0)
    if req.microversion < (2, 39):
        out["maxImageMeta"] = 128
    if req.microversion < (2, 57):
        out.update(maxPersonality=5, maxPersonalitySize=10240)
    return out


def _request_id(kind: str, key: str) -> str:
    return f"req-{stable_uuid('request', f'{kind}:{key}')}"


def _event(name: str, start: str, finish: str | None, result: str | None, host: str
           ) -> dict[str, Any]:
    return {"event": name, "start_time": start, "finish_time": finish, "result": result,
            "traceback": None, "host": host,
            "hostId": stable_uuid("host-id", host).replace("-", "")[:56], "details": None}


def _migration_action(server: ServerRecord, mig: MigrationRecord) -> dict[str, Any]:
    """A live migration as an instance action, with the events Nova records for one (the
    conductor's, the checks on both computes, the migration on the source, pre and post on
    the destination), newest first; the migration's own event is Error when it failed, and
    nothing is recorded after it then, or while it runs."""
    done = mig.status not in ("queued", "preparing", "running", "post-migrating")
    failed = mig.status in FAILED_MIGRATIONS
    dest = mig.dest or mig.source
    start, end = mig.created_at, mig.updated_at
    events = [_event("conductor_migrate_server", start, start, "Success", "controller"),
              _event("compute_check_can_live_migrate_destination", start, start, "Success",
                     dest),
              _event("compute_check_can_live_migrate_source", start, start, "Success",
                     mig.source),
              _event("compute_live_migration", start, end if done else None,
                     ("Error" if failed else "Success") if done else None, mig.source)]
    if not failed:
        events.insert(3, _event("compute_pre_live_migration", start, start, "Success", dest))
        if done:
            events.append(_event("compute_post_live_migration_at_destination", end, end,
                                 "Success", dest))
    return {"action": "live-migration", "instance_uuid": server.id,
            "request_id": _request_id("migration", mig.uuid), "user_id": mig.user_id,
            "project_id": mig.project_id, "start_time": start,
            "message": "Error" if failed else None, "updated_at": end,
            "events": list(reversed(events))}


def _window(req: Request) -> tuple[datetime, datetime]:
    """start..end of a usage request (Nova's default: the last day up to now)."""
    from datetime import timedelta, timezone

    now = datetime.now(timezone.utc).replace(tzinfo=None)
    start_arg, end_arg = req.arg("start"), req.arg("end")
    try:
        start = datetime.fromisoformat(start_arg) if start_arg else now - timedelta(days=1)
        end = datetime.fromisoformat(end_arg) if end_arg else now
    except ValueError:
        raise HTTPError(400, "Invalid start time or end time") from None
    return start.replace(tzinfo=None), min(end.replace(tzinfo=None), now)
