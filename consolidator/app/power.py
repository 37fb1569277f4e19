"""One host's power through its BMC, from the command line.

Power-off goes through the same guarded path as a plan's (consolidator.execution.host_power):
the name is mapped to one Nova compute host, the executor lease of the cloud is taken so that no
plan runs meanwhile, the service is disabled with a reason, the host is re-checked empty to Nova
and Placement, and the power-off is journaled, verified and fenced. Outside a plan it needs
--force; the checks are never skipped.
"""

from __future__ import annotations

from collections.abc import Callable

from consolidator.app.context import AppContext, host_driver
from consolidator.app.notify import notify
from consolidator.app.settings import executor_settings
from consolidator.app.snapshots import read_cloud
from consolidator.core.errors import ConsolidatorError, UsageError
from consolidator.core.model import Cluster, Host
from consolidator.execution.host_power import GuardedPower, power_on_unjournaled
from consolidator.openstack.nova import Nova
from consolidator.store.leases import acquire_or_raise, make_holder, release

#: The reason written on a host powered off by 'hosts power off --force'.
OPERATOR_REASON = "consolidator: powered off by an operator (hosts power off --force)"


def resolve_host(cluster: Cluster, name: str) -> Host:
    """The one host a name means: its hypervisor hostname or its nova-compute host, else the
    hypervisor hostname's first label. UsageError when none or several match."""
    exact = [h for h in cluster.hosts if name in (h.name, h.compute_host)]
    found = exact or [h for h in cluster.hosts if h.name.split(".")[0] == name]
    if not found:
        raise UsageError(f"no compute host is named {name!r}: see 'consolidator hosts list'")
    if len(found) > 1:
        raise UsageError(f"{name!r} names {len(found)} compute hosts "
                         f"({', '.join(h.name for h in found)}): give the full name")
    return found[0]


def _driver(ctx: AppContext, host: Host):  # noqa: ANN202 - a PowerDriver
    driver = host_driver(ctx.power_lookup(), host)
    if driver is None:
        raise UsageError(f"host {host.name!r} is not in the BMC file")
    return driver


def power_status(ctx: AppContext, name: str) -> str:
    """The host's power as its BMC reports it."""
    return _driver(ctx, resolve_host(read_cloud(ctx).cluster, name)).power_state()


def power_on(ctx: AppContext, name: str) -> str:
    """Power the host on; clear its forced-down mark, wait for nova-compute, and enable it
    again if consolidator disabled it. The state its BMC then reports."""
    host = resolve_host(read_cloud(ctx).cluster, name)
    driver = _driver(ctx, host)
    state = power_on_unjournaled(Nova(ctx.connect()), host, driver,
                                 executor_settings(ctx.config).power_timeout)
    notify(ctx, "power.on", host=host.name, state="succeeded", result=f"the BMC reads {state}")
    return state


def power_off(ctx: AppContext, name: str, *, force: bool,
              confirm: Callable[[str], bool]) -> str:
    """Power an empty host off outside a plan, through the guarded path; the BMC's state."""
    if not force:
        raise UsageError("powering a host off outside a plan needs --force (the same checks "
                         "as a plan's still run); or make a plan with 'consolidator plan'")
    host = resolve_host(read_cloud(ctx).cluster, name)
    driver = _driver(ctx, host)
    settings = executor_settings(ctx.config)
    engine = ctx.engine()
    cloud = ctx.cloud_name or "default"
    guarded = GuardedPower(engine, Nova(ctx.connect()), cloud, ctx.report, settings.power_timeout)
    problem = guarded.not_empty(host)
    if problem is not None:
        raise ConsolidatorError(f"refusing to power off {host.name}: {problem}")
    if not confirm(f"power off {host.name}?"):
        raise UsageError("not confirmed")
    lease, holder = f"executor:{cloud}", make_holder()
    acquire_or_raise(engine, lease, holder, settings.lease_ttl,
                     f"an executor for cloud {cloud!r}")
    try:
        problem = guarded.power_off(None, host, driver, OPERATOR_REASON)
    finally:
        release(engine, lease, holder)
    notify(ctx, "power.off", host=host.name, state="failed" if problem else "succeeded",
           result=problem or "powered off by an operator (hosts power off --force)")
    if problem is not None:
        raise ConsolidatorError(f"refusing to power off {host.name}: {problem}")
    return driver.power_state()
