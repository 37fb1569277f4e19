"""The power actions every emulated BMC (IPMI, Redfish) drives: on the fake host, with
credentials and faults."""

from __future__ import annotations

import threading
from collections.abc import Callable

from consolidator.core.energy_model import modelled_draw
from consolidator.core.model import stable_uuid
from consolidator.emulators.fake.faults import Faults
from consolidator.emulators.fake.state import CloudState

#: How often a graceful shutdown held by a bmc_shutdown_held fault looks whether it may end.
HELD_POLL_S = 0.1


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

    def identity(self, host: str) -> dict[str, str]:
        """What the host's BMC reports of its system, distinct per host: the Redfish UUID
        (the hypervisor's id), SerialNumber and HostName, and the IPMI system GUID."""
        rec = self.state.host(host)
        if rec is None:
            raise KeyError(f"unknown host {host!r}")
        return {"uuid": rec.model.id or stable_uuid("system", host),
                "serial": f"FAKE-{stable_uuid('serial', host)[:8]}", "hostname": rec.name,
                "guid": stable_uuid("system-guid", host)}

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
        """Power on (nova-compute comes up after service_up_delay_s). A power-on during a
        graceful shutdown cancels it, unless a bmc_shutdown_not_cancelled fault names the
        host: then, as on real hardware whose OS is going down, the host is still on, the
        power-on does nothing and the shutdown ends off."""
        with self._lock:
            going_down = host in self._timers
        if going_down and self.faults.bmc_fault("bmc_shutdown_not_cancelled", host):
            return
        self._cancel(host)
        self._set_power(host, True)

    def force_off(self, host: str) -> None:
        """Power off at once (nova-compute goes down at once)."""
        self._cancel(host)
        self._vanish_if_asked(host)
        self._set_power(host, False)

    def _vanish_if_asked(self, host: str) -> None:
        """A bmc_vanishes_after_off fault: the power-off is accepted, then the BMC stops
        answering (a bmc_unreachable rule replaces it, until cleared)."""
        if self.faults.bmc_shot("bmc_vanishes_after_off", host):
            self.faults.add({"type": "bmc_unreachable", "host": host})

    def shutting_down(self) -> list[str]:
        """The hosts whose graceful shutdown was accepted and has not completed yet."""
        with self._lock:
            return sorted(self._timers)

    def graceful_off(self, host: str) -> None:
        """An ACPI shutdown: the host powers off after graceful_delay_s, or, while a
        bmc_shutdown_held fault names it, once the fault is cleared."""
        if self.power(host) == "off":
            return
        self._vanish_if_asked(host)
        if self.graceful_delay_s <= 0 and not self.shutdown_held(host):
            self.force_off(host)
            return
        with self._lock:
            if host not in self._timers:
                self._start_timer(host, max(self.graceful_delay_s, 0.0))

    def _start_timer(self, host: str, delay: float) -> None:
        """Finish host's graceful shutdown after delay seconds (the caller holds the lock)."""
        timer = threading.Timer(delay, lambda: self._finish_graceful(host, timer))
        timer.daemon = True
        self._timers[host] = timer
        timer.start()

    def _finish_graceful(self, host: str, timer: threading.Timer) -> None:
        with self._lock:
            if self._timers.get(host) is not timer:
                return                        # cancelled: powered on or off meanwhile
            if self.shutdown_held(host):
                self._start_timer(host, HELD_POLL_S)
                return
            del self._timers[host]
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

    def shutdown_held(self, host: str) -> bool:
        """Whether a bmc_shutdown_held fault names this host (its graceful shutdown waits)."""
        return self.faults.bmc_fault("bmc_shutdown_held", host)

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
