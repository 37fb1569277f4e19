"""Keystone's projects for the fake cloud: the one the user is scoped to, and every project
that owns a server of the scenario ('openstack project list|show', and the project names
'server list --long' and 'usage list' resolve)."""

from __future__ import annotations

from typing import Any

from consolidator.emulators.fake.server import HTTPError, Request, Response, Router
from consolidator.emulators.fake.state import CloudState


class Projects:
    """GET /identity/v3/projects and /identity/v3/projects/{id}."""

    def __init__(self, state: CloudState, own_id: str, own_name: str) -> None:
        self.state = state
        self.own = (own_id, own_name)

    def register(self, router: Router) -> None:
        """Add the routes (the identity service is registered by Keystone)."""
        router.add("GET", "/identity/v3/projects", self.list_projects, service="identity")
        router.add("GET", "/identity/v3/projects/{id}", self.show_project, service="identity")

    def _all(self) -> dict[str, str]:
        """id -> name; a scenario's project ids name themselves."""
        found = {self.own[0]: self.own[1]}
        with self.state.locked():
            for server in self.state.server_list:
                found.setdefault(server.project_id, server.project_id)
        return found

    @staticmethod
    def _view(req: Request, ident: str, name: str) -> dict[str, Any]:
        return {"id": ident, "name": name, "domain_id": "default", "description": "",
                "enabled": True, "parent_id": "default", "is_domain": False, "tags": [],
                "options": {},
                "links": {"self": f"{req.base_url}/identity/v3/projects/{ident}"}}

    def list_projects(self, req: Request) -> Response:
        """GET /identity/v3/projects[?name=]."""
        name = req.arg("name")
        views = [self._view(req, i, n) for i, n in self._all().items()
                 if name is None or n == name]
        return Response(200, {"projects": views, "links": {
            "self": f"{req.base_url}/identity/v3/projects", "previous": None, "next": None}})

    def show_project(self, req: Request) -> Response:
        """GET /identity/v3/projects/{id}."""
        ident = req.params["id"]
        name = self._all().get(ident)
        if name is None:
            raise HTTPError(404, f"Could not find project: {ident}.")
        return Response(200, {"project": self._view(req, ident, name)})
