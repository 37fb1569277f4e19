"""One host's power through its BMC, from the command line: the guarded path.

Power-off is refused while any server (any project, any state) is on the host, and the
servers are read again right before the call.
"""

from __future__ import annotations

from collections.abc import Callable

from consolidator.app.context import AppContext
from consolidator.errors import ConsolidatorError, UsageError
from consolidator.nova import Nova


def _driver(ctx: AppContext, host: str):  # noqa: ANN202 - a PowerDriver
    driver = ctx.power_lookup()(host)
    if driver is None:
        raise UsageError(f"host {host!r} is not in the BMC file")
    return driver


def power_status(ctx: AppContext, host: str) -> str:
    """The host's power as its BMC reports it."""
    return _driver(ctx, host).power_state()


def power_on(ctx: AppContext, host: str) -> str:
    """Power the host on; the state its BMC then reports."""
    return _driver(ctx, host).power_on()


def power_off(ctx: AppContext, host: str, confirm: Callable[[str], bool]) -> str:
    """Power an empty host off, after confirm(question); the state its BMC then reports."""
    driver = _driver(ctx, host)
    nova = Nova(ctx.connect())
    servers = nova.servers_on(host)
    if servers:
        raise ConsolidatorError(f"refusing to power off {host}: {len(servers)} servers are on "
                                f"it (migrate them first, e.g. with a plan)")
    if not confirm(f"power off {host}?"):
        raise UsageError("not confirmed")
    if nova.servers_on(host):  # re-read right before the destructive call
        raise ConsolidatorError(f"refusing to power off {host}: servers appeared on it")
    return driver.power_off(graceful=True)
