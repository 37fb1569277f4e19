"""Nova's flavors API over the flavors derived from the scenario's instances."""

from __future__ import annotations

from typing import Any

from consolidator.emulators.fake.nova_common import links_for, page
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router
from consolidator.emulators.fake.state import CloudState, Flavor


class Flavors:
    """GET /flavors, /flavors/detail, /flavors/{id} and its extra specs."""

    def __init__(self, state: CloudState) -> None:
        self.state = state

    def register(self, router: Router) -> None:
        """Add the flavor routes (the compute service is registered by Nova)."""
        v = "/compute/v2.1"
        router.add("GET", f"{v}/flavors", self.list_flavors, service="compute")
        router.add("GET", f"{v}/flavors/detail", self.list_flavors_detail, service="compute")
        router.add("GET", f"{v}/flavors/{{id}}", self.show_flavor, service="compute")
        router.add("GET", f"{v}/flavors/{{id}}/os-extra_specs", self.extra_specs,
                   service="compute")

    def _flavors(self, req: Request) -> list[Flavor]:
        return sorted(self.state.flavors.values(), key=lambda f: f.id)

    def flavor_view(self, req: Request, f: Flavor, detail: bool) -> dict[str, Any]:
        """A flavor as /flavors or /flavors/detail shows it."""
        view: dict[str, Any] = {"id": f.id, "name": f.name,
                                "links": links_for(req, "flavors", f.id)}
        if req.microversion >= (2, 55):
            view["description"] = None
        if not detail:
            return view
        view.update({"ram": f.ram, "disk": f.disk, "vcpus": f.vcpus,
                     "swap": 0 if req.microversion >= (2, 75) else "",
                     "rxtx_factor": 1.0, "OS-FLV-EXT-DATA:ephemeral": 0,
                     "OS-FLV-DISABLED:disabled": False, "os-flavor-access:is_public": True})
        if req.microversion >= (2, 61):
            view["extra_specs"] = dict(f.extra_specs)
        return view

    def _list_flavors(self, req: Request, detail: bool) -> Response:
        public = req.arg("is_public")
        flavors = self._flavors(req)
        if public is not None and public.lower() not in ("none", "true", "1", "yes", "t"):
            flavors = []  # every derived flavor is public
        path = "/compute/v2.1/flavors" + ("/detail" if detail else "")
        chunk, next_href = page(req, flavors, lambda f: f.id, path)
        body: dict[str, Any] = {"flavors": [self.flavor_view(req, f, detail) for f in chunk]}
        if next_href:
            body["flavors_links"] = [{"rel": "next", "href": next_href}]
        return Response(200, body)

    def list_flavors(self, req: Request) -> Response:
        """GET /flavors."""
        return self._list_flavors(req, detail=False)

    def list_flavors_detail(self, req: Request) -> Response:
        """GET /flavors/detail (is_public=None lists all)."""
        return self._list_flavors(req, detail=True)

    def _flavor_or_404(self, flavor_id: str) -> Flavor:
        for flavor in self.state.flavors.values():
            if flavor_id in (flavor.id, flavor.name):
                return flavor
        raise HTTPError(404, f"Flavor {flavor_id} could not be found.")

    def show_flavor(self, req: Request) -> Response:
        """GET /flavors/{id}."""
        return Response(200, {"flavor": self.flavor_view(
            req, self._flavor_or_404(req.params["id"]), True)})

    def extra_specs(self, req: Request) -> Response:
        """GET /flavors/{id}/os-extra_specs."""
        flavor = self._flavor_or_404(req.params["id"])
        return Response(200, {"extra_specs": dict(flavor.extra_specs)})
