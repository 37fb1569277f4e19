"""Nova's totals: the hypervisor statistics (below 2.88), the hosts API (below 2.43) and the
quota sets, as 'openstack hypervisor stats show', 'host list|show' and 'quota show' read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from consolidator.emulators.fake.nova import Nova
from consolidator.emulators.fake.nova_admin import CONTROL_SERVICES, CONTROLLER
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router

#: The hypervisor fields Nova sums over the enabled computes, in its order.
STATISTICS = ("count", "current_workload", "disk_available_least", "free_disk_gb",
              "free_ram_mb", "local_gb", "local_gb_used", "memory_mb", "memory_mb_used",
              "running_vms", "vcpus", "vcpus_used")
#: The quotas, as the real-Nova backend sets them (the limits of nova_usage.LIMITS):
#: unlimited cores, instances, RAM and server groups, Nova's defaults otherwise; the
#: nova-network ones only below 2.36, the injected files only below 2.57.
QUOTAS = {"cores": -1, "instances": -1, "ram": -1, "key_pairs": 100, "metadata_items": 128,
          "server_groups": -1, "server_group_members": -1, "injected_files": 5,
          "injected_file_content_bytes": 10240, "injected_file_path_bytes": 255,
          "fixed_ips": -1, "floating_ips": -1, "security_groups": -1,
          "security_group_rules": -1}
NETWORK_QUOTAS = ("fixed_ips", "floating_ips", "security_groups", "security_group_rules")
FILE_QUOTAS = ("injected_files", "injected_file_content_bytes", "injected_file_path_bytes")
#: The topic each control-plane binary lists under in the hosts API.
TOPICS = {"nova-scheduler": "scheduler", "nova-conductor": "conductor"}

HypervisorView = Callable[[Request, Any, float, bool], dict[str, Any]]


class NovaTotals:
    """Hypervisor statistics, hosts and quota sets over Nova's state."""

    def __init__(self, nova: Nova, hypervisor_view: HypervisorView) -> None:
        self.nova = nova
        self.state = nova.state
        #: (request, host record, now, detail) -> the hypervisor's view (NovaAdmin's).
        self.hypervisor_view = hypervisor_view

    def register(self, router: Router) -> None:
        """Add the routes; before NovaAdmin's, whose /os-hypervisors/{id} would take
        'statistics' for an id."""
        v = "/compute/v2.1"
        for path, handler in (
                ("/os-hypervisors/statistics", self.statistics),
                ("/os-hosts", self.list_hosts),
                ("/os-hosts/{host}", self.show_host),
                ("/os-quota-sets/{project}", self.quotas),
                ("/os-quota-sets/{project}/detail", self.quotas_detail),
                ("/os-quota-sets/{project}/defaults", self.quotas_defaults)):
            router.add("GET", v + path, handler, service="compute")

    def statistics(self, req: Request) -> Response:
        """GET /os-hypervisors/statistics (2.1 to 2.87): the enabled computes' sums."""
        _until(req, (2, 87))
        totals = dict.fromkeys(STATISTICS, 0)
        with self.state.locked() as now:
            for rec in self.state.hosts.values():
                if rec.status != "enabled":
                    continue
                view = self.hypervisor_view(req, rec, now, True)
                totals["count"] += 1
                for key in STATISTICS[1:]:
                    totals[key] += int(view[key])
        return Response(200, {"hypervisor_statistics": totals})

    def list_hosts(self, req: Request) -> Response:
        """GET /os-hosts (2.1 to 2.42): every enabled service's host, topic and zone."""
        _until(req, (2, 42))
        zone = req.arg("zone")
        hosts = [{"host_name": CONTROLLER, "service": TOPICS[b], "zone": "internal"}
                 for b in CONTROL_SERVICES]
        with self.state.locked():
            hosts += [{"host_name": rec.compute_host, "service": "compute",
                       "zone": rec.model.availability_zone}
                      for rec in self.state.hosts.values() if rec.status == "enabled"]
        if zone:
            hosts = [h for h in hosts if h["zone"] == zone]
        return Response(200, {"hosts": hosts})

    def show_host(self, req: Request) -> Response:
        """GET /os-hosts/{host} (2.1 to 2.42): the compute's total, used now, used by its
        instances, and used per project."""
        _until(req, (2, 42))
        name = req.params["host"]
        with self.state.locked() as now:
            rec = self.state.by_compute_host.get(name)
            if rec is None:
                raise HTTPError(404, f"Host '{name}' is not mapped to any cell")
            view = self.hypervisor_view(req, rec, now, True)
            servers = [self.state.servers[sid] for sid in rec.servers]
        per_project: dict[str, list[int]] = {}
        for server in servers:
            used = per_project.setdefault(server.project_id, [0, 0, 0])
            for i, amount in enumerate((server.flavor.vcpus, server.flavor.ram,
                                        server.flavor.disk)):
                used[i] += amount
        rows: list[tuple[str, list[int]]] = [
            ("(total)", [view["vcpus"], view["memory_mb"], view["local_gb"]]),
            ("(used_now)", [view["vcpus_used"], view["memory_mb_used"], view["local_gb_used"]]),
            ("(used_max)", [sum(u[i] for u in per_project.values()) for i in range(3)]),
            *per_project.items()]
        return Response(200, {"host": [
            {"resource": {"host": name, "project": project, "cpu": cpu, "memory_mb": ram,
                          "disk_gb": disk}} for project, (cpu, ram, disk) in rows]})

    def _quota_keys(self, req: Request) -> list[str]:
        hidden: tuple[str, ...] = ()
        if req.microversion >= (2, 36):
            hidden += NETWORK_QUOTAS
        if req.microversion >= (2, 57):
            hidden += FILE_QUOTAS
        return sorted(k for k in QUOTAS if k not in hidden)

    def quotas(self, req: Request) -> Response:
        """GET /os-quota-sets/{project}: the project's quotas."""
        return Response(200, {"quota_set": {"id": req.params["project"], **{
            k: QUOTAS[k] for k in self._quota_keys(req)}}})

    def quotas_defaults(self, req: Request) -> Response:
        """GET /os-quota-sets/{project}/defaults: the defaults (the same: none is set per
        project)."""
        return self.quotas(req)

    def quotas_detail(self, req: Request) -> Response:
        """GET /os-quota-sets/{project}/detail: each quota's limit, what the project uses of
        it, and 0 reserved."""
        project = req.params["project"]
        with self.state.locked():
            mine = [s for s in self.state.servers.values() if s.project_id == project]
            groups = [g for g in self.state.groups
                      if any(self.state.servers[m].project_id == project
                             for m in g.members if m in self.state.servers)]
        in_use = {"instances": len(mine), "cores": sum(s.flavor.vcpus for s in mine),
                  "ram": sum(s.flavor.ram for s in mine), "server_groups": len(groups)}
        return Response(200, {"quota_set": {"id": project, **{
            k: {"limit": QUOTAS[k], "in_use": in_use.get(k, 0), "reserved": 0}
            for k in self._quota_keys(req)}}})


def _until(req: Request, last: tuple[int, int]) -> None:
    """404 above the last microversion that has the API, as Nova answers."""
    if req.microversion > last:
        raise HTTPError(404, "The resource could not be found.")
