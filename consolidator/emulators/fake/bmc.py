"""The emulated BMCs of a scenario: which protocol each host speaks, serving them, and the
bmc.yaml that reaches them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from consolidator.core.errors import ScenarioError
from consolidator.emulators.fake.bmc_power import BmcPower
from consolidator.emulators.fake.server import Router

DRIVERS = ("ipmi", "redfish")


class EmulatedBmcs:
    """The BMCs of every scenario host with `bmc: {driver: ipmi|redfish}`."""

    def __init__(self, power: BmcPower) -> None:
        self.power = power
        self.drivers: dict[str, str] = {}
        for rec in power.state.hosts.values():
            spec = rec.model.bmc
            if not spec:
                continue
            driver = spec.get("driver") if hasattr(spec, "get") else None
            if driver not in DRIVERS:
                raise ScenarioError(f"host {rec.name!r}: bmc.driver must be one of "
                                    f"{', '.join(DRIVERS)}, got {driver!r}")
            self.drivers[rec.name] = str(driver)
        self._ipmi: Any = None

    def hosts(self, driver: str) -> list[str]:
        """The hosts whose BMC speaks this driver, in scenario order."""
        return [h for h, d in self.drivers.items() if d == driver]

    def register(self, router: Router) -> None:
        """Add the Redfish routes to the fake cloud's HTTP server."""
        from consolidator.emulators.fake.redfish import Redfish

        Redfish(self.power, self.hosts("redfish")).register(router)

    def start(self) -> None:
        """Bind and serve the IPMI BMCs (Redfish rides on the HTTP server)."""
        if self._ipmi is None and self.hosts("ipmi"):
            from consolidator.emulators.fake.ipmi import IpmiBmcs

            self._ipmi = IpmiBmcs(self.power, self.hosts("ipmi"))
            self._ipmi.start()

    def stop(self) -> None:
        """Stop the IPMI BMCs and pending graceful shutdowns."""
        if self._ipmi is not None:
            self._ipmi.stop()
            self._ipmi = None
        self.power.stop()

    def ipmi_ports(self) -> dict[str, int]:
        """host -> UDP port of its IPMI BMC (empty until started)."""
        return self._ipmi.ports() if self._ipmi is not None else {}

    def config(self, base_url: str) -> dict[str, Any]:
        """The bmc.yaml document for every emulated BMC (Redfish here is plain http), each
        entry with its system's identity (checked before every power action)."""
        ports = self.ipmi_ports()
        hosts: dict[str, Any] = {}
        for host, driver in self.drivers.items():
            ident = self.power.identity(host)
            if driver == "ipmi":
                hosts[host] = {"driver": "ipmi", "address": "127.0.0.1",
                               "port": ports.get(host), "system_guid": ident["guid"]}
            else:
                hosts[host] = {"driver": "redfish", "address": base_url,
                               "system_id": f"/redfish/v1/Systems/{host}",
                               "allow_insecure_http": base_url.startswith("http://"),
                               "system_uuid": ident["uuid"]}
        return {"defaults": {"username": self.power.username,
                             "password": self.power.password}, "hosts": hosts}

    def listening(self, base_url: str) -> list[str]:
        """One line per BMC: where it listens."""
        ports = self.ipmi_ports()
        return [f"{host}: ipmi 127.0.0.1:{ports.get(host)}/udp" if driver == "ipmi" else
                f"{host}: redfish {base_url}/redfish/v1/Systems/{host}"
                for host, driver in self.drivers.items()]


def write_private_yaml(path: str | Path, doc: Any) -> Path:
    """Write YAML readable by the owner only (mode 0600), atomically."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yaml.safe_dump(doc, out, sort_keys=False)
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return path
