"""The fake cloud's control API under /_fake/ (no auth): faults, power and a state dump."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from consolidator.core.errors import ModelError, ScenarioError
from consolidator.core.model import Instance
from consolidator.emulators.fake.faults import Faults
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router, Service
from consolidator.emulators.fake.state import CloudState


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message}}


class Control:
    """Test and demo hooks: add or clear faults, switch power, read the state."""

    def __init__(self, state: CloudState, faults: Faults,
                 set_power: Callable[[str, bool], None]) -> None:
        self.state = state
        self.faults = faults
        self.set_power = set_power

    def register(self, router: Router) -> None:
        """Add the /_fake/ routes."""
        router.add_service(Service("control", _error_body), "/_fake")
        for method, path, handler in (
                ("GET", "/_fake/state", self.show_state),
                ("GET", "/_fake/faults", self.list_faults),
                ("POST", "/_fake/faults", self.add_faults),
                ("DELETE", "/_fake/faults", self.clear_faults),
                ("GET", "/_fake/power/{host}", self.show_power),
                ("POST", "/_fake/power/{host}", self.change_power),
                ("POST", "/_fake/servers", self.create_server),
                ("DELETE", "/_fake/servers/{server}", self.delete_server)):
            router.add(method, path, handler, service="control", auth=False)

    def show_state(self, req: Request) -> Response:
        """GET /_fake/state: hosts, servers, migrations and faults."""
        return Response(200, {**self.state.summary(), "faults": self.faults.rules()})

    def list_faults(self, req: Request) -> Response:
        """GET /_fake/faults."""
        return Response(200, {"faults": self.faults.rules()})

    def add_faults(self, req: Request) -> Response:
        """POST /_fake/faults: one fault dict or a list of them."""
        body = req.json()
        rules = body if isinstance(body, list) else [body]
        try:
            added = [self.faults.add(rule) for rule in rules]
        except ScenarioError as exc:
            raise HTTPError(400, str(exc)) from None
        return Response(201, {"faults": added})

    def clear_faults(self, req: Request) -> Response:
        """DELETE /_fake/faults."""
        self.faults.clear()
        return Response(204)

    def _host(self, req: Request) -> str:
        rec = self.state.host(req.params["host"])
        if rec is None:
            raise HTTPError(404, f"unknown host {req.params['host']!r}")
        return rec.name

    def show_power(self, req: Request) -> Response:
        """GET /_fake/power/{host}."""
        name = self._host(req)
        return Response(200, {"host": name, "power": self.state.hosts[name].power})

    def change_power(self, req: Request) -> Response:
        """POST /_fake/power/{host} with {"on": true|false}."""
        name = self._host(req)
        body = req.json()
        if not isinstance(body, dict) or not isinstance(body.get("on"), bool):
            raise HTTPError(400, 'expected {"on": true} or {"on": false}')
        self.set_power(name, body["on"])
        return Response(200, {"host": name, "power": self.state.hosts[name].power})

    def create_server(self, req: Request) -> Response:
        """POST /_fake/servers {"name", "host", "vcpus", "memory_mb", "disk_gb",
        "metadata"}: a server ACTIVE on that host at once (a test hook, not Nova's API)."""
        body = req.json()
        if not isinstance(body, dict) or not isinstance(body.get("name"), str) \
                or not isinstance(body.get("host"), str):
            raise HTTPError(400, 'expected {"name": ..., "host": ..., "vcpus": ...}')
        try:
            inst = Instance(name=body["name"], host=body["host"],
                            vcpus=int(body.get("vcpus", 1)),
                            memory_mb=int(body.get("memory_mb", 512)),
                            disk_gb=int(body.get("disk_gb", 1)),
                            metadata={str(k): str(v)
                                      for k, v in (body.get("metadata") or {}).items()},
                            usage=body.get("usage"))
            rec = self.state.add_server(inst)
        except (KeyError, ModelError, TypeError, ValueError) as exc:
            raise HTTPError(409, str(exc)) from None
        return Response(201, {"server": {"id": rec.id, "name": rec.name, "host": rec.host}})

    def delete_server(self, req: Request) -> Response:
        """DELETE /_fake/servers/{server}: the server is gone at once (a test hook)."""
        try:
            self.state.remove_server(req.params["server"])
        except KeyError as exc:
            raise HTTPError(404, str(exc)) from None
        except ValueError as exc:
            raise HTTPError(409, str(exc)) from None
        return Response(204)
