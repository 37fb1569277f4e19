"""What every emulated BMC shares: power actions on the fake host, credentials and faults."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from consolidator.core.energy_model import modelled_draw
from consolidator.core.errors import ScenarioError
from consolidator.emulators.fake.faults import Faults
from consolidator.emulators.fake.server import Router
from consolidator.emulators.fake.state import CloudState

DRIVERS = ("ipmi", "redfish")


class BmcPower:
    """Power actions of the emulated BMCs, driving the fake cloud's hosts."""

    def __init__(self, state: CloudState, faults: Faults,
                 set_power: Callable[[str, bool], None], *, username: str, password: str,
                 graceful_delay_s: float) -> None:
        self.state = state
        self.faults = faults
        self._set_power = set_power
        self.username = username
        self.password = password
        self.graceful_delay_s = graceful_delay_s
        self._timers: dict[str, threading.Timer] = {}
        self._lock = threading.Lock()

    def power(self, host: str) -> str:
        """'on' or 'off'."""
        rec = self.state.host(host)
        if rec is None:
            raise KeyError(f"unknown host {host!r}")
        return rec.power

    def watts(self, host: str) -> float | None:
        """The draw the BMC reports: idle + (peak - idle) x load while on; None while off or
        under a bmc_no_power_reading fault (the BMC has no power meter)."""
        rec = self.state.host(host)
        if rec is None:
            raise KeyError(f"unknown host {host!r}")
        if rec.power != "on" or self.faults.bmc_fault("bmc_no_power_reading", host):
            return None
        return round(modelled_draw(rec.model, self.state.host_load(host)), 1)

    def _cancel(self, host: str) -> None:
        with self._lock:
            timer = self._timers.pop(host, None)
        if timer is not None:
            timer.cancel()

    def on(self, host: str) -> None:
        """Power on (nova-compute comes up after service_up_delay_s)."""
        self._cancel(host)
        self._set_power(host, True)

    def force_off(self, host: str) -> None:
        """Power off at once (nova-compute goes down at once)."""
        self._cancel(host)
        self._set_power(host, False)

    def graceful_off(self, host: str) -> None:
        """An ACPI shutdown: the host powers off after graceful_delay_s."""
        if self.power(host) == "off":
            return
        if self.graceful_delay_s <= 0:
            self.force_off(host)
            return
        timer = threading.Timer(self.graceful_delay_s, self._finish_graceful, (host,))
        timer.daemon = True
        with self._lock:
            if host in self._timers:
                return
            self._timers[host] = timer
        timer.start()

    def _finish_graceful(self, host: str) -> None:
        with self._lock:
            self._timers.pop(host, None)
        self._set_power(host, False)

    def restart(self, host: str) -> None:
        """Power off then on at once."""
        self.force_off(host)
        self.on(host)

    def stop(self) -> None:
        """Cancel pending graceful shutdowns."""
        with self._lock:
            timers, self._timers = list(self._timers.values()), {}
        for timer in timers:
            timer.cancel()

    def auth_fails(self, host: str) -> bool:
        """Whether a bmc_auth_fails fault names this host."""
        return self.faults.bmc_fault("bmc_auth_fails", host)

    def unreachable(self, host: str) -> bool:
        """Whether a bmc_unreachable fault names this host."""
        return self.faults.bmc_fault("bmc_unreachable", host)

    def busy(self, host: str) -> bool:
        """Whether a bmc_busy fault names this host (a power read it answers uses one shot)."""
        return self.faults.bmc_shot("bmc_busy", host)

    def drops_login(self, host: str) -> bool:
        """Whether a bmc_drops_logins fault names this host (a login it ignores uses a shot)."""
        return self.faults.bmc_shot("bmc_drops_logins", host)

    def credentials_ok(self, host: str, username: str, password: str) -> bool:
        """Whether this host's BMC accepts these credentials now."""
        return (not self.auth_fails(host) and username == self.username
                and password == self.password)


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
        """The bmc.yaml document for every emulated BMC (Redfish here is plain http)."""
        ports = self.ipmi_ports()
        hosts: dict[str, Any] = {}
        for host, driver in self.drivers.items():
            if driver == "ipmi":
                hosts[host] = {"driver": "ipmi", "address": "127.0.0.1",
                               "port": ports.get(host)}
            else:
                hosts[host] = {"driver": "redfish", "address": base_url,
                               "system_id": f"/redfish/v1/Systems/{host}",
                               "allow_insecure_http": base_url.startswith("http://")}
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
