"""Placement for the fake cloud: resource providers, inventories, usages and allocations."""

from __future__ import annotations

import uuid
from typing import Any

from consolidator.fake.microversion import negotiator
from consolidator.fake.server import HTTPError, Request, Response, Router, Service
from consolidator.fake.state import CloudState, HostRecord

MIN_VERSION = (1, 0)
MAX_VERSION = (1, 39)
RESOURCE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
_TITLES = {400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
           406: "Not Acceptable", 409: "Conflict", 500: "Internal Server Error",
           503: "Service Unavailable"}


def error_body(status: int, message: str) -> dict[str, Any]:
    """Placement's error body: {"errors": [{"status", "title", "detail", "request_id"}]}."""
    return {"errors": [{"status": status, "title": _TITLES.get(status, "Error"),
                        "detail": message, "request_id": f"req-{uuid.uuid4()}",
                        "code": "placement.undefined_code"}]}


class Placement:
    """The placement API over a CloudState: one resource provider per host."""

    def __init__(self, state: CloudState) -> None:
        self.state = state

    def register(self, router: Router) -> None:
        """Add Placement's routes."""
        prepare, finish = negotiator("placement", MIN_VERSION, MAX_VERSION)
        router.add_service(Service("placement", error_body, prepare, finish), "/placement")
        p = "/placement"
        router.add("GET", p, self.versions, service="placement", auth=False)
        for path, handler in (
                ("/resource_providers", self.list_providers),
                ("/resource_providers/{uuid}", self.show_provider),
                ("/resource_providers/{uuid}/inventories", self.inventories),
                ("/resource_providers/{uuid}/inventories/{rc}", self.inventory),
                ("/resource_providers/{uuid}/usages", self.usages),
                ("/resource_providers/{uuid}/allocations", self.allocations),
                ("/resource_providers/{uuid}/traits", self.traits),
                ("/resource_providers/{uuid}/aggregates", self.aggregates)):
            router.add("GET", p + path, handler, service="placement")

    def versions(self, req: Request) -> Response:
        """GET /placement/: the version document."""
        return Response(200, {"versions": [{
            "id": "v1.0", "max_version": "1.39", "min_version": "1.0", "status": "CURRENT",
            "links": [{"rel": "self", "href": ""}]}]})

    def _provider_view(self, req: Request, rec: HostRecord) -> dict[str, Any]:
        rp = rec.model.id
        base = f"/placement/resource_providers/{rp}"
        view: dict[str, Any] = {"uuid": rp, "name": rec.name, "generation": rec.generation,
                                "links": [{"rel": "self", "href": base}] + [
                                    {"rel": rel, "href": f"{base}/{rel}"}
                                    for rel in ("inventories", "usages", "aggregates",
                                                "traits", "allocations")]}
        if req.microversion >= (1, 14):
            view.update({"parent_provider_uuid": None, "root_provider_uuid": rp})
        return view

    def _provider(self, req: Request) -> HostRecord:
        rec = self.state.by_provider.get(req.params["uuid"])
        if rec is None:
            raise HTTPError(404, f"No resource provider with uuid {req.params['uuid']} found")
        return rec

    def list_providers(self, req: Request) -> Response:
        """GET /resource_providers, filtered by name and uuid."""
        name, rp = req.arg("name"), req.arg("uuid")
        with self.state.locked():
            if rp is not None:
                found = self.state.by_provider.get(rp)
                recs = [found] if found else []
            elif name is not None:
                found = self.state.hosts.get(name)
                recs = [found] if found else []
            else:
                recs = list(self.state.hosts.values())
            if name is not None:
                recs = [r for r in recs if r.name == name]
            views = [self._provider_view(req, r) for r in recs]
        return Response(200, {"resource_providers": views})

    def show_provider(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}."""
        with self.state.locked():
            return Response(200, self._provider_view(req, self._provider(req)))

    @staticmethod
    def _inventory(rec: HostRecord) -> dict[str, dict[str, Any]]:
        m = rec.model
        rows = (("VCPU", m.vcpus, m.reserved_vcpus, m.cpu_allocation_ratio),
                ("MEMORY_MB", m.memory_mb, m.reserved_memory_mb, m.ram_allocation_ratio),
                ("DISK_GB", m.disk_gb, m.reserved_disk_gb, m.disk_allocation_ratio))
        return {rc: {"total": total, "reserved": reserved, "min_unit": 1,
                     "max_unit": total, "step_size": 1, "allocation_ratio": ratio}
                for rc, total, reserved, ratio in rows if total > 0}

    def inventories(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/inventories."""
        with self.state.locked():
            rec = self._provider(req)
            return Response(200, {"inventories": self._inventory(rec),
                                  "resource_provider_generation": rec.generation})

    def inventory(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/inventories/{rc}."""
        with self.state.locked():
            rec = self._provider(req)
            row = self._inventory(rec).get(req.params["rc"])
            if row is None:
                raise HTTPError(404, f"No inventory of class {req.params['rc']} for "
                                     f"{rec.model.id}")
            return Response(200, {**row, "resource_provider_generation": rec.generation})

    def usages(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/usages (in-flight migrations' claims included)."""
        with self.state.locked():
            rec = self._provider(req)
            usages = {rc: used for rc, used, inv in zip(
                RESOURCE_CLASSES, rec.used, (rec.model.vcpus, rec.model.memory_mb,
                                             rec.model.disk_gb), strict=True) if inv > 0}
            return Response(200, {"usages": usages,
                                  "resource_provider_generation": rec.generation})

    def allocations(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/allocations, by consumer."""
        with self.state.locked():
            rec = self._provider(req)
            allocations = {consumer: {"resources": {
                rc: amount for rc, amount in zip(RESOURCE_CLASSES, resources, strict=True)
                if amount}}
                for consumer, resources in rec.allocations.items()}
            return Response(200, {"allocations": allocations,
                                  "resource_provider_generation": rec.generation})

    def traits(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/traits (1.6+)."""
        with self.state.locked():
            rec = self._provider(req)
            return Response(200, {"traits": ["COMPUTE_NODE"],
                                  "resource_provider_generation": rec.generation})

    def aggregates(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/aggregates (1.1+)."""
        with self.state.locked():
            rec = self._provider(req)
            body: dict[str, Any] = {"aggregates": []}
            if req.microversion >= (1, 19):
                body["resource_provider_generation"] = rec.generation
            return Response(200, body)
