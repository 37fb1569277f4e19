"""Whether the daemon's work is alive: the systemd watchdog is pinged only while it is, so
that a hung cycle (a call that never returns, a lock never released) stops the pings and
systemd restarts the daemon. Work shows progress by pulses: each step of the cycle, each
look at a running migration."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Liveness:
    """When the running work (if any) last showed progress."""

    def __init__(self, limit: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.clock = limit, clock
        self._lock = threading.Lock()
        self._what = ""
        self._last = clock()

    def working(self, what: str) -> None:
        """Work starts now."""
        with self._lock:
            self._what, self._last = what, self.clock()

    def pulse(self) -> None:
        """The running work made progress."""
        with self._lock:
            self._last = self.clock()

    def idle(self) -> None:
        """The work ended."""
        with self._lock:
            self._what = ""

    def stalled(self) -> str | None:
        """Why the daemon counts as hung (the running work showed no progress for longer
        than the limit), or None while it is alive."""
        with self._lock:
            what, quiet = self._what, self.clock() - self._last
        if what and quiet > self.limit:
            return (f"the {what} has shown no progress for {quiet:.0f} s ([daemon] "
                    f"hang_timeout {self.limit:g} s)")
        return None


def notify_service(*assignments: str) -> bool:
    """Tell systemd (sd_notify: READY=1, WATCHDOG=1, STOPPING=1, STATUS=...); False
    outside systemd."""
    from consolidator.telemetry.systemd import notify

    return notify(*assignments)


def watchdog_period() -> float | None:
    """systemd's WatchdogSec= for this process in seconds, or None."""
    from consolidator.telemetry.systemd import watchdog_period as period

    return period()
