"""Placement for the fake cloud: resource providers, inventories, usages and allocations."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from consolidator.core.model import stable_uuid
from consolidator.emulators.fake.aggregates import aggregates_of
from consolidator.emulators.fake.microversion import negotiator
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router, Service
from consolidator.emulators.fake.state import CloudState, HostRecord

MIN_VERSION = (1, 0)
MAX_VERSION = (1, 39)
_TITLES = {400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
           406: "Not Acceptable", 409: "Conflict", 500: "Internal Server Error",
           503: "Service Unavailable"}


def error_body(status: int, message: str) -> dict[str, Any]:
    """Placement's error body: {"errors": [{"status", "title", "detail", "request_id"}]}."""
    return {"errors": [{"status": status, "title": _TITLES.get(status, "Error"),
                        "detail": message, "request_id": f"req-{uuid.uuid4()}",
                        "code": "placement.undefined_code"}]}


#: Classes served on a nested child provider of the compute node, as Nova reports vGPUs.
NESTED_CLASSES = frozenset({"VGPU"})


@dataclass(frozen=True)
class Part:
    """One resource provider of a host's tree: the root or its nested child."""

    rec: HostRecord
    uuid: str
    name: str
    parent: str | None
    columns: tuple[int, ...]     # the host's class columns this provider holds


def parts(rec: HostRecord) -> list[Part]:
    """The providers of a host: the compute node, and a child when it has nested classes."""
    nested = tuple(k for k, rc in enumerate(rec.classes) if rc in NESTED_CLASSES
                   and rc in rec.model.resources)
    root = Part(rec, rec.model.id, rec.name, None,
                tuple(k for k in range(len(rec.classes)) if k not in nested))
    if not nested:
        return [root]
    child = Part(rec, stable_uuid("provider", f"{rec.name}_pgpu"), f"{rec.name}_pgpu",
                 root.uuid, nested)
    return [root, child]


class Placement:
    """The placement API over a CloudState: a provider tree per host (a nested child holds
    its vGPUs), inventories of every class, traits, usages, allocations and allocation
    candidates."""

    def __init__(self, state: CloudState) -> None:
        self.state = state
        self.parts = {part.uuid: part for rec in state.hosts.values() for part in parts(rec)}

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
                ("/resource_providers/{uuid}/aggregates", self.aggregates),
                ("/allocation_candidates", self.allocation_candidates)):
            router.add("GET", p + path, handler, service="placement")

    def versions(self, req: Request) -> Response:
        """GET /placement/: the version document."""
        return Response(200, {"versions": [{
            "id": "v1.0", "max_version": "1.39", "min_version": "1.0", "status": "CURRENT",
            "links": [{"rel": "self", "href": ""}]}]})

    def _provider_view(self, req: Request, part: Part) -> dict[str, Any]:
        base = f"/placement/resource_providers/{part.uuid}"
        view: dict[str, Any] = {"uuid": part.uuid, "name": part.name,
                                "generation": part.rec.generation,
                                "links": [{"rel": "self", "href": base}] + [
                                    {"rel": rel, "href": f"{base}/{rel}"}
                                    for rel in ("inventories", "usages", "aggregates",
                                                "traits", "allocations")]}
        if req.microversion >= (1, 14):
            view.update({"parent_provider_uuid": part.parent,
                         "root_provider_uuid": part.parent or part.uuid})
        return view

    def _provider(self, req: Request) -> Part:
        part = self.parts.get(req.params["uuid"])
        if part is None:
            raise HTTPError(404, f"No resource provider with uuid {req.params['uuid']} found")
        return part

    def list_providers(self, req: Request) -> Response:
        """GET /resource_providers, filtered by name, uuid, in_tree, resources (1.4: each
        provider has room for all of them itself), member_of (1.3: any of in:A,B; several
        parameters all, 1.24) and required traits (1.18; !forbidden, 1.22)."""
        name, rp, tree = req.arg("name"), req.arg("uuid"), req.arg("in_tree")
        wanted = _resources(req.arg("resources") or "") if req.microversion >= (1, 4) else {}
        traits = [t for t in (req.arg("required") or "").split(",") if t] \
            if req.microversion >= (1, 18) else []
        member_of = [_uuids(v) for v in req.query.get("member_of", [])] \
            if req.microversion >= (1, 3) else []
        root = None
        if tree is not None:
            part = self.parts.get(tree)
            root = (part.parent or part.uuid) if part else ""
        with self.state.locked():
            found = [part for part in self.parts.values()
                     if (rp is None or part.uuid == rp) and (name is None or part.name == name)
                     and (root is None or (part.parent or part.uuid) == root)
                     and _part_fits(part, wanted, traits)
                     and all(provider_aggregates(self.state, part) & m for m in member_of)]
            views = [self._provider_view(req, part) for part in found]
        return Response(200, {"resource_providers": views})

    def show_provider(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}."""
        with self.state.locked():
            return Response(200, self._provider_view(req, self._provider(req)))

    @staticmethod
    def _inventory(part: Part) -> dict[str, dict[str, Any]]:
        m = part.rec.model
        rows = {"VCPU": (m.vcpus, m.reserved_vcpus, m.cpu_allocation_ratio),
                "MEMORY_MB": (m.memory_mb, m.reserved_memory_mb, m.ram_allocation_ratio),
                "DISK_GB": (m.disk_gb, m.reserved_disk_gb, m.disk_allocation_ratio)}
        out: dict[str, dict[str, Any]] = {}
        for k in part.columns:
            rc = part.rec.classes[k]
            if rc in rows:
                total, reserved, ratio = rows[rc]
                if total > 0:
                    out[rc] = {"total": total, "reserved": reserved, "min_unit": 1,
                               "max_unit": total, "step_size": 1, "allocation_ratio": ratio}
            elif rc in m.resources:
                inv = m.resources[rc]
                out[rc] = {"total": int(inv["total"]), "reserved": int(inv["reserved"]),
                           "min_unit": int(inv["min_unit"]), "max_unit": int(inv["max_unit"]),
                           "step_size": int(inv["step_size"]),
                           "allocation_ratio": inv["allocation_ratio"]}
        return out

    def inventories(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/inventories."""
        with self.state.locked():
            part = self._provider(req)
            return Response(200, {"inventories": self._inventory(part),
                                  "resource_provider_generation": part.rec.generation})

    def inventory(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/inventories/{rc}."""
        with self.state.locked():
            part = self._provider(req)
            row = self._inventory(part).get(req.params["rc"])
            if row is None:
                raise HTTPError(404, f"No inventory of class {req.params['rc']} for "
                                     f"{part.uuid}")
            return Response(200, {**row, "resource_provider_generation": part.rec.generation})

    def usages(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/usages (in-flight migrations' claims included)."""
        with self.state.locked():
            part = self._provider(req)
            held = self._inventory(part)
            usages = {part.rec.classes[k]: part.rec.used[k] for k in part.columns
                      if part.rec.classes[k] in held}
            return Response(200, {"usages": usages,
                                  "resource_provider_generation": part.rec.generation})

    def allocations(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/allocations, by consumer."""
        with self.state.locked():
            part = self._provider(req)
            allocations = {}
            for consumer, resources in part.rec.allocations.items():
                mine = {part.rec.classes[k]: resources[k] for k in part.columns
                        if resources[k]}
                if mine:
                    allocations[consumer] = {"resources": mine}
            return Response(200, {"allocations": allocations,
                                  "resource_provider_generation": part.rec.generation})

    def traits(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/traits (1.6+)."""
        with self.state.locked():
            part = self._provider(req)
            return Response(200, {"traits": provider_traits(part),
                                  "resource_provider_generation": part.rec.generation})

    def aggregates(self, req: Request) -> Response:
        """GET /resource_providers/{uuid}/aggregates (1.1+): the host aggregates Nova
        mirrors into Placement, by uuid (a nested provider is in none)."""
        with self.state.locked():
            part = self._provider(req)
            body: dict[str, Any] = {"aggregates": sorted(provider_aggregates(self.state, part))}
            if req.microversion >= (1, 19):
                body["resource_provider_generation"] = part.rec.generation
            return Response(200, body)

    def allocation_candidates(self, req: Request) -> Response:
        """GET /allocation_candidates: the subset consolidator uses, as Placement defines it:
        one unnumbered group (resources, required with !forbidden traits), in_tree, limit.
        A tree is a candidate when every class fits its free capacity and the provider's
        min_unit, max_unit and step_size, and its providers have the required traits and
        none of the forbidden ones."""
        wanted = _resources(req.arg("resources") or "")
        traits = [t for t in (req.arg("required") or "").split(",") if t]
        in_tree = req.arg("in_tree")
        limit = int(req.arg("limit") or 0)
        with self.state.locked():
            roots = [part.rec for part in self.parts.values() if part.parent is None
                     and (in_tree is None or in_tree in {p.uuid for p in parts(part.rec)})]
            found = [rec for rec in roots if _fits(rec, wanted, traits)]
            if limit:
                found = found[:limit]
            return Response(200, {
                "allocation_requests": [_allocation_request(req, rec, wanted)
                                        for rec in found],
                "provider_summaries": {part.uuid: _summary(req, part, wanted)
                                       for rec in found for part in parts(rec)}})


def _resources(text: str) -> dict[str, int]:
    """'VCPU:2,MEMORY_MB:512' -> {'VCPU': 2, 'MEMORY_MB': 512}; 400 when malformed."""
    out: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        rc, sep, amount = item.partition(":")
        if not sep or not amount.isdigit():
            raise HTTPError(400, f"Badly formed resources parameter. Expected resources "
                                 f"query string parameter in form: ?resources=VCPU:2,"
                                 f"MEMORY_MB:1024. Got: {text}.")
        out[rc] = out.get(rc, 0) + int(amount)
    return out


def _fits(rec: HostRecord, wanted: dict[str, int], traits: list[str]) -> bool:
    have = set(rec.model.traits) | {"COMPUTE_NODE"}
    if any((t[1:] in have) if t.startswith("!") else (t not in have) for t in traits):
        return False
    capacity, limits = rec.capacity(), rec.max_units()
    for rc, amount in wanted.items():
        if rc not in rec.classes or amount <= 0:
            if amount > 0:
                return False
            continue
        k = rec.classes.index(rc)
        inv = rec.model.resources.get(rc, {"min_unit": 1, "step_size": 1})
        if (amount > limits[k] or amount < inv["min_unit"] or amount % inv["step_size"]
                or rec.used[k] + amount > capacity[k] + 1e-9):
            return False
    return True


def _allocation_request(req: Request, rec: HostRecord, wanted: dict[str, int]
                        ) -> dict[str, Any]:
    """One candidate: a dict by provider from 1.12, a list of providers before."""
    allocations: dict[str, dict[str, Any]] = {}
    for part in parts(rec):
        mine = {rc: n for rc, n in wanted.items()
                if n and rc in rec.classes and rec.classes.index(rc) in part.columns}
        if mine:
            allocations[part.uuid] = {"resources": mine}
    if req.microversion < (1, 12):
        return {"allocations": [{"resource_provider": {"uuid": rp}, **body}
                                for rp, body in allocations.items()]}
    return {"allocations": allocations}


def _summary(req: Request, part: Part, wanted: dict[str, int]) -> dict[str, Any]:
    """A provider's summary: capacity and use of the classes asked for (of all its classes
    from 1.27), its traits from 1.17, its tree from 1.29."""
    held = Placement._inventory(part)
    capacity = part.rec.capacity()
    resources = {rc: {"capacity": int(capacity[part.rec.classes.index(rc)]),
                      "used": part.rec.used[part.rec.classes.index(rc)]}
                 for rc in held if req.microversion >= (1, 27) or rc in wanted}
    out: dict[str, Any] = {"resources": resources}
    if req.microversion >= (1, 17):
        out["traits"] = provider_traits(part)
    if req.microversion >= (1, 29):
        out.update(parent_provider_uuid=part.parent,
                   root_provider_uuid=part.parent or part.uuid)
    return out


def provider_traits(part: Part) -> list[str]:
    """A provider's traits: the compute node's COMPUTE_NODE and the scenario's."""
    return ["COMPUTE_NODE", *part.rec.model.traits] if part.parent is None else []


def provider_aggregates(state: CloudState, part: Part) -> set[str]:
    """The uuids of the aggregates a provider is in (the root: its host's; a child: none)."""
    return set() if part.parent is not None else \
        {a.uuid for a in aggregates_of(state, part.rec.name)}


def _uuids(value: str) -> set[str]:
    """member_of's 'UUID' or 'in:UUID,UUID'; 400 as Placement when one is not a uuid."""
    found = set(value.removeprefix("in:").split(","))
    for item in found:
        try:
            uuid.UUID(item)
        except ValueError:
            raise HTTPError(400, f"Invalid query string parameters: Expected 'member_of' "
                                 f"parameter to contain valid UUID(s). Got: {item}") from None
    return found


def _part_fits(part: Part, wanted: dict[str, int], traits: list[str]) -> bool:
    """Whether one provider has room for every class asked for itself, and the traits."""
    have = set(provider_traits(part))
    if any((t[1:] in have) if t.startswith("!") else (t not in have) for t in traits):
        return False
    rec, held = part.rec, Placement._inventory(part)
    capacity = rec.capacity()
    for rc, amount in wanted.items():
        row = held.get(rc)
        if row is None:
            return False
        k = rec.classes.index(rc)
        if amount > row["max_unit"] or amount < row["min_unit"] or \
                amount % row["step_size"] or rec.used[k] + amount > capacity[k] + 1e-9:
            return False
    return True
