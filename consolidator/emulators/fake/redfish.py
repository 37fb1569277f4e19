"""Redfish for the fake cloud's emulated BMCs: service root, Systems and the Reset action."""

from __future__ import annotations

import base64
import binascii
import time
from typing import Any

from consolidator.emulators.fake.bmc_power import BmcPower
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router, Service

ROOT = "/redfish/v1"
RESET_TYPES = ("On", "ForceOff", "GracefulShutdown", "ForceRestart")
#: How long a request to an unreachable BMC hangs at most (the client times out first).
HANG_LIMIT_S = 600.0


def error_body(status: int, message: str) -> dict[str, Any]:
    """The Redfish error body."""
    return {"error": {"code": "Base.1.8.GeneralError", "message": message,
                      "@Message.ExtendedInfo": [{"MessageId": "Base.1.8.GeneralError",
                                                 "Message": message}]}}


def _basic_auth(req: Request) -> tuple[str, str] | None:
    header = req.headers.get("Authorization") or ""
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(encoded).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return user, password


class Redfish:
    """One ComputerSystem per host whose scenario entry says bmc: {driver: redfish}."""

    def __init__(self, power: BmcPower, hosts: list[str]) -> None:
        self.power = power
        self.hosts = list(hosts)

    def register(self, router: Router) -> None:
        """Add the /redfish/ routes."""
        router.add_service(Service("redfish", error_body, self._prepare),
                           "/redfish")
        for method, path, handler in (
                ("GET", "/redfish", self.versions),
                ("GET", ROOT, self.service_root),
                ("GET", ROOT + "/Systems", self.systems),
                ("GET", ROOT + "/Systems/{host}", self.system),
                ("POST", ROOT + "/Systems/{host}/Actions/ComputerSystem.Reset", self.reset),
                ("GET", ROOT + "/Chassis", self.chassis_collection),
                ("GET", ROOT + "/Chassis/{host}", self.chassis),
                ("GET", ROOT + "/Chassis/{host}/Power", self.chassis_power),
                ("GET", ROOT + "/Chassis/{host}/EnvironmentMetrics",
                 self.environment_metrics)):
            router.add(method, path, handler, service="redfish", auth=False)

    def _prepare(self, req: Request) -> None:
        """Basic auth on everything below the service root; BMC faults per system."""
        path = req.path.rstrip("/")
        if path in ("/redfish", ROOT):
            return
        host = self._host_of(path)
        if host is not None and self.power.unreachable(host):
            deadline = time.monotonic() + HANG_LIMIT_S
            while self.power.unreachable(host) and time.monotonic() < deadline:
                time.sleep(0.1)
        creds = _basic_auth(req)
        if creds is None or (host is None and creds != (self.power.username,
                                                         self.power.password)) or (
                host is not None and not self.power.credentials_ok(host, *creds)):
            raise HTTPError(401, "Authentication required",
                            {"WWW-Authenticate": 'Basic realm="fake BMC"'})

    def _host_of(self, path: str) -> str | None:
        for prefix in (ROOT + "/Systems/", ROOT + "/Chassis/"):
            if path.startswith(prefix):
                name = path[len(prefix):].split("/", 1)[0]
                return name if name in self.hosts else None
        return None

    def _known(self, req: Request) -> str:
        host = req.params["host"]
        if host not in self.hosts:
            raise HTTPError(404, f"System {host} not found")
        return host

    def versions(self, req: Request) -> Response:
        """GET /redfish: the protocol versions."""
        return Response(200, {"v1": ROOT + "/"})

    def service_root(self, req: Request) -> Response:
        """GET /redfish/v1/: the service root (no auth, as in sushy-tools)."""
        return Response(200, {
            "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot", "@odata.id": ROOT + "/",
            "@odata.context": ROOT + "/$metadata#ServiceRoot.ServiceRoot",
            "Id": "RootService", "Name": "Fake cloud Redfish service",
            "RedfishVersion": "1.8.0", "UUID": "8b9e3f6a-0000-4000-8000-0000000000fc",
            "Systems": {"@odata.id": ROOT + "/Systems"},
            "Chassis": {"@odata.id": ROOT + "/Chassis"}})

    def systems(self, req: Request) -> Response:
        """GET /redfish/v1/Systems: one member per redfish host."""
        return Response(200, {
            "@odata.type": "#ComputerSystemCollection.ComputerSystemCollection",
            "@odata.id": ROOT + "/Systems", "Name": "Computer System Collection",
            "Members@odata.count": len(self.hosts),
            "Members": [{"@odata.id": f"{ROOT}/Systems/{h}"} for h in self.hosts]})

    def system(self, req: Request) -> Response:
        """GET /redfish/v1/Systems/{host}: the ComputerSystem with PowerState."""
        host = self._known(req)
        if self.power.busy(host):
            raise HTTPError(503, f"The BMC of {host} is busy; retry later")
        path = f"{ROOT}/Systems/{host}"
        ident = self.power.identity(host)
        return Response(200, {
            "@odata.type": "#ComputerSystem.v1_10_0.ComputerSystem", "@odata.id": path,
            "Id": host, "Name": host, "UUID": ident["uuid"],
            "SerialNumber": ident["serial"], "HostName": ident["hostname"],
            "SystemType": "Physical",
            "PowerState": "On" if self.power.power(host) == "on" else "Off",
            "Status": {"State": "Enabled", "Health": "OK"},
            "Links": {"Chassis": [{"@odata.id": f"{ROOT}/Chassis/{host}"}]},
            "Actions": {"#ComputerSystem.Reset": {
                "target": f"{path}/Actions/ComputerSystem.Reset",
                "ResetType@Redfish.AllowableValues": list(RESET_TYPES)}}})

    def chassis_collection(self, req: Request) -> Response:
        """GET /redfish/v1/Chassis: one chassis per redfish host."""
        return Response(200, {
            "@odata.type": "#ChassisCollection.ChassisCollection",
            "@odata.id": ROOT + "/Chassis", "Name": "Chassis Collection",
            "Members@odata.count": len(self.hosts),
            "Members": [{"@odata.id": f"{ROOT}/Chassis/{h}"} for h in self.hosts]})

    def _meter(self, host: str) -> str | None:
        """Where the chassis reports power: 'Power' (the default), 'EnvironmentMetrics'
        (bmc: {meter: environment_metrics}), or None under bmc_no_power_reading."""
        if self.power.faults.bmc_fault("bmc_no_power_reading", host):
            return None
        rec = self.power.state.host(host)
        spec = rec.model.bmc if rec is not None and rec.model.bmc else {}
        meter = spec.get("meter", "power") if hasattr(spec, "get") else "power"
        return "EnvironmentMetrics" if meter == "environment_metrics" else "Power"

    def chassis(self, req: Request) -> Response:
        """GET /redfish/v1/Chassis/{host}: the host's chassis, linking its power meter."""
        host = self._known(req)
        path = f"{ROOT}/Chassis/{host}"
        doc: dict[str, Any] = {
            "@odata.type": "#Chassis.v1_15_0.Chassis", "@odata.id": path, "Id": host,
            "Name": host, "ChassisType": "RackMount",
            "PowerState": "On" if self.power.power(host) == "on" else "Off",
            "Links": {"ComputerSystems": [{"@odata.id": f"{ROOT}/Systems/{host}"}]}}
        meter = self._meter(host)
        if meter is not None:
            doc[meter] = {"@odata.id": f"{path}/{meter}"}
        return Response(200, doc)

    def _metered(self, req: Request, meter: str) -> tuple[str, float | None]:
        host = self._known(req)
        if self._meter(host) != meter:
            raise HTTPError(404, f"{req.path} not found")
        return host, self.power.watts(host)

    def chassis_power(self, req: Request) -> Response:
        """GET .../Chassis/{host}/Power: PowerControl's PowerConsumedWatts (null while off)."""
        host, watts = self._metered(req, "Power")
        path = f"{ROOT}/Chassis/{host}/Power"
        return Response(200, {
            "@odata.type": "#Power.v1_7_0.Power", "@odata.id": path, "Id": "Power",
            "Name": "Power", "PowerControl": [{
                "@odata.id": f"{path}#/PowerControl/0", "MemberId": "0",
                "Name": "System Power Control", "PowerConsumedWatts": watts}]})

    def environment_metrics(self, req: Request) -> Response:
        """GET .../Chassis/{host}/EnvironmentMetrics: PowerWatts.Reading (null while off)."""
        host, watts = self._metered(req, "EnvironmentMetrics")
        return Response(200, {
            "@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics",
            "@odata.id": f"{ROOT}/Chassis/{host}/EnvironmentMetrics",
            "Id": "EnvironmentMetrics", "Name": "Chassis Environment Metrics",
            "PowerWatts": {"DataSourceUri": f"{ROOT}/Chassis/{host}/Sensors/power",
                           "Reading": watts}})

    def reset(self, req: Request) -> Response:
        """POST .../Actions/ComputerSystem.Reset {"ResetType": ...}."""
        host = self._known(req)
        body = req.json()
        kind = body.get("ResetType") if isinstance(body, dict) else None
        if kind not in RESET_TYPES:
            raise HTTPError(400, f"ResetType must be one of {', '.join(RESET_TYPES)}")
        {"On": self.power.on, "ForceOff": self.power.force_off,
         "GracefulShutdown": self.power.graceful_off,
         "ForceRestart": self.power.restart}[kind](host)
        return Response(204)
