"""Host power for the real-Nova backend: what the project's emulated BMCs switch.

A powered-off host's nova-compute stops (no RPC server, no heartbeat), so Nova reports it
down after service_down_time, as after a real power cut; power-on starts it again with the
same guests. PowerBook quacks like the project's fake CloudState for the BMC emulators and
the /_fake/ control routes.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from consolidator.core.energy_model import host_load
from consolidator.core.model import Host
from consolidator.emulators.realnova.controlplane import ControlPlane

LOG = logging.getLogger(__name__)


@dataclass
class PowerRecord:
    """One host's power, as the BMC emulators read it."""

    model: Host
    power: str = "on"

    @property
    def name(self) -> str:
        """The host's name."""
        return self.model.name


class PowerBook:
    """Every host's power, tied to its nova-compute service."""

    def __init__(self, plane: ControlPlane, hosts: list[Host]) -> None:
        self.plane = plane
        self.hosts = {h.name: PowerRecord(h) for h in hosts}
        self._lock = threading.Lock()

    def host(self, name: str) -> PowerRecord | None:
        """The record of a host, or None."""
        return self.hosts.get(name)

    def host_load(self, name: str) -> float:
        """The vCPUs its fake hypervisor has claimed over its cores (what its BMC's power
        reading follows); 0 while its nova-compute is stopped."""
        driver = self.plane.drivers.get(name)
        used = driver.resources.vcpus_used if driver is not None else 0
        return host_load(self.hosts[name].model, used)

    def set_power(self, name: str, on: bool) -> None:
        """Power a host on (start nova-compute) or off (stop it)."""
        with self._lock:
            rec = self.hosts[name]
            if on and rec.power != "on":
                self.plane.start_compute(name)
                rec.power = "on"
                LOG.info("power: %s on, nova-compute started", name)
            elif not on and rec.power != "off":
                self.plane.stop_compute(name)
                rec.power = "off"
                LOG.info("power: %s off, nova-compute stopped", name)

    def summary(self) -> dict[str, Any]:
        """GET /_fake/state: each host's power and whether its nova-compute runs."""
        return {"backend": "nova", "hosts": {
            name: {"power": rec.power, "nova_compute": self.plane.is_running(name)}
            for name, rec in self.hosts.items()}}
