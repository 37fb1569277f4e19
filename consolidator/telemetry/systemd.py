"""systemd's service protocol, without libsystemd: sd_notify() is one datagram to the
AF_UNIX socket in $NOTIFY_SOCKET (READY=1, WATCHDOG=1, STOPPING=1, STATUS=...), and the
watchdog's period comes from $WATCHDOG_USEC (for this process when $WATCHDOG_PID names it).
Outside systemd (no $NOTIFY_SOCKET) every call does nothing."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

LOG = logging.getLogger(__name__)


def notify(*assignments: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send 'KEY=value' lines to the service manager; False when there is none or the send
    fails (logged at debug: the daemon goes on)."""
    env = os.environ if environ is None else environ
    address = env.get("NOTIFY_SOCKET", "")
    if not address or not assignments:
        return False
    if address.startswith("@"):            # an abstract socket
        address = "\0" + address[1:]
    elif not address.startswith("/"):
        LOG.debug("NOTIFY_SOCKET %r is not a unix socket path: not notifying", address)
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto("\n".join(assignments).encode(), address)
    except OSError as exc:
        LOG.debug("sd_notify to %s failed: %s", address, exc)
        return False
    return True


def watchdog_period(environ: Mapping[str, str] | None = None) -> float | None:
    """The watchdog's timeout in seconds (WatchdogSec=), or None when it is off or meant
    for another process."""
    env = os.environ if environ is None else environ
    pid = env.get("WATCHDOG_PID", "")
    if pid and pid != str(os.getpid()):
        return None
    try:
        usec = int(env.get("WATCHDOG_USEC", "0"))
    except ValueError:
        return None
    return usec / 1e6 if usec > 0 else None
