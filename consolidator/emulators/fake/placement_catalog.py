"""Placement beyond the providers: resource classes, traits, a consumer's allocations and a
project's usages, as Placement answers them (osc-placement's 'resource class list', 'trait
list', 'resource provider allocation show' and 'resource usage show').

Resource classes are Placement's standard ones (os-resource-classes 1.1, in its order) and the
scenario's CUSTOM_* classes. Traits are COMPUTE_NODE and the scenario's: the fake does not copy
os-traits' whole standard catalogue, nor the COMPUTE_* capability traits a virt driver
reports."""

from __future__ import annotations

from typing import Any

from consolidator.emulators.fake.placement import Part, Placement, provider_traits
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router
from consolidator.emulators.fake.state import CloudState

#: Placement's standard resource classes, in the order it lists them.
STANDARD_CLASSES = (
    "VCPU", "MEMORY_MB", "DISK_GB", "PCI_DEVICE", "SRIOV_NET_VF", "NUMA_SOCKET", "NUMA_CORE",
    "NUMA_THREAD", "NUMA_MEMORY_MB", "IPV4_ADDRESS", "VGPU", "VGPU_DISPLAY_HEAD",
    "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", "PCPU",
    "MEM_ENCRYPTION_CONTEXT", "FPGA", "PGPU", "NET_PACKET_RATE_KILOPACKET_PER_SEC",
    "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC", "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC")


class PlacementCatalog:
    """The class and trait catalogues, and allocations by consumer and project."""

    def __init__(self, state: CloudState, placement: Placement) -> None:
        self.state = state
        self.placement = placement

    def register(self, router: Router) -> None:
        """Add the routes (Placement's service is registered by Placement)."""
        p = "/placement"
        for path, handler in (("/resource_classes", self.list_classes),
                              ("/resource_classes/{name}", self.show_class),
                              ("/traits", self.list_traits),
                              ("/traits/{name}", self.show_trait),
                              ("/allocations/{consumer}", self.consumer_allocations),
                              ("/usages", self.project_usages)):
            router.add("GET", p + path, handler, service="placement")

    def _classes(self) -> list[str]:
        custom = sorted(rc for rc in self.state.classes if rc.startswith("CUSTOM_"))
        return [*STANDARD_CLASSES, *custom]

    @staticmethod
    def _class_view(name: str) -> dict[str, Any]:
        return {"name": name, "links": [{"rel": "self",
                                         "href": f"/placement/resource_classes/{name}"}]}

    def list_classes(self, req: Request) -> Response:
        """GET /resource_classes (1.2+)."""
        _since(req, (1, 2))
        return Response(200, {"resource_classes": [self._class_view(n)
                                                   for n in self._classes()]})

    def show_class(self, req: Request) -> Response:
        """GET /resource_classes/{name} (1.2+)."""
        _since(req, (1, 2))
        name = req.params["name"]
        if name not in self._classes():
            raise HTTPError(404, f"No such resource class {name}.")
        return Response(200, self._class_view(name))

    def _traits(self, associated: bool | None) -> list[str]:
        used = {t for part in self.placement.parts.values() for t in provider_traits(part)}
        known = used | {"COMPUTE_NODE"}
        if associated is True:
            known = used
        elif associated is False:
            known -= used
        return sorted(known)

    def list_traits(self, req: Request) -> Response:
        """GET /traits (1.6+), with name=in:A,B or name=startswith:P, and associated."""
        _since(req, (1, 6))
        raw = req.arg("associated")
        associated = None if raw is None else raw.lower() in ("true", "1", "yes")
        traits = self._traits(associated)
        name = req.arg("name")
        if name is not None:
            if name.startswith("in:"):
                wanted = set(name[3:].split(","))
                traits = [t for t in traits if t in wanted]
            elif name.startswith("startswith:"):
                traits = [t for t in traits if t.startswith(name[11:])]
            else:
                raise HTTPError(400, f"Badly formatted name parameter. Expected name query "
                                     f"string parameter in form: ?name=[in|startswith]:"
                                     f"[name1,name2|prefix]. Got: \"{name}\"")
        return Response(200, {"traits": traits})

    def show_trait(self, req: Request) -> Response:
        """GET /traits/{name} (1.6+): 204 when it exists."""
        _since(req, (1, 6))
        if req.params["name"] not in self._traits(None):
            raise HTTPError(404, f"No such trait(s): {req.params['name']}.")
        return Response(204, None)

    def consumer_allocations(self, req: Request) -> Response:
        """GET /allocations/{consumer}: its allocations per provider (with the provider's
        generation), and its project and user from 1.12, generation and type from 1.38."""
        consumer = req.params["consumer"]
        with self.state.locked():
            allocations: dict[str, Any] = {}
            for part in self.placement.parts.values():
                held = part.rec.allocations.get(consumer)
                mine = {part.rec.classes[k]: held[k] for k in part.columns
                        if held and held[k]} if held else {}
                if mine:
                    allocations[part.uuid] = {"resources": mine,
                                              "generation": part.rec.generation}
            server = self.state.servers.get(consumer)
        body: dict[str, Any] = {"allocations": allocations}
        if allocations and req.microversion >= (1, 12):
            body.update(project_id=server.project_id if server else self.state.project_id,
                        user_id=server.user_id if server else self.state.user_id)
        if allocations and req.microversion >= (1, 38):
            body.update(consumer_generation=1, consumer_type="unknown")
        return Response(200, body)

    def project_usages(self, req: Request) -> Response:
        """GET /usages?project_id=P[&user_id=U] (1.9+): what its consumers hold, per
        class."""
        _since(req, (1, 9))
        project = req.arg("project_id")
        if not project:
            raise HTTPError(400, "Invalid query string parameters: 'project_id' is a required "
                                 "property")
        user = req.arg("user_id")
        totals: dict[str, int] = {}
        with self.state.locked():
            for server in self.state.servers.values():
                if server.project_id != project or (user and server.user_id != user):
                    continue
                for part in self.placement.parts.values():
                    _add(totals, part, part.rec.allocations.get(server.id))
        return Response(200, {"usages": totals})


def _add(totals: dict[str, int], part: Part, held: tuple[int, ...] | None) -> None:
    for k in part.columns if held else ():
        if held is not None and held[k]:
            rc = part.rec.classes[k]
            totals[rc] = totals.get(rc, 0) + held[k]


def _since(req: Request, version: tuple[int, int]) -> None:
    """Placement answers 404 for a route newer than the request's microversion."""
    if req.microversion < version:
        raise HTTPError(404, "The resource could not be found.")
