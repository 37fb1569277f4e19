"""One host's power through its BMC, from the command line.

Both directions go through the same guarded path as a plan's
(consolidator.execution.host_power): the name is mapped to one Nova compute host, and the
executor lease of the cloud is taken and renewed for as long as the action runs, so that no
plan or rollback runs meanwhile, and every destructive call is preceded by a journal row that
checks the lease generation. Power-off disables the service with a reason, re-checks the host
empty to Nova and Placement, and is journaled, verified (post-conditions included) and
fenced; outside a plan it needs --force, and the checks are never skipped. A rescue (the
power-off undone: work landed, or the BMC entry reached another system) is told as the
host.rescued event after the power.off one, as a plan's run tells its rescues. Power-on is
journaled step by step: the BMC on, the forced-down mark cleared, the service enabled again
if consolidator disabled it.
"""

from __future__ import annotations

from collections.abc import Callable

from consolidator.app.context import AppContext, host_driver
from consolidator.app.leadership import executor_cloud
from consolidator.app.notify import journal_mark, notify, rescues_after
from consolidator.app.settings import executor_settings, rules_from_config
from consolidator.app.snapshots import read_cloud
from consolidator.core.errors import ConsolidatorError, UsageError
from consolidator.core.host_gate import OPERATOR
from consolidator.core.model import Cluster, Host
from consolidator.core.rollback_plan import OPERATOR_POWER_OFF
from consolidator.execution.gate import Gate
from consolidator.execution.host_power import GuardedPower
from consolidator.execution.lease_keeper import LeaseKeeper
from consolidator.openstack.nova import Nova
from consolidator.power.driver import read_power
from consolidator.store.leases import LeaseLostError

#: The reason written on a host powered off by 'hosts power off --force': the operator's hold
#: (it does not start with 'consolidator:'), which only 'hosts power on' ends.
OPERATOR_REASON = OPERATOR_POWER_OFF


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


def _guarded(ctx: AppContext) -> tuple[GuardedPower, LeaseKeeper]:
    """The guarded power path for an operator's command, and the keeper of the cloud's
    executor lease it acts under (renewed for as long as the power action runs)."""
    settings = executor_settings(ctx.config)
    engine = ctx.engine()
    cloud = executor_cloud(ctx)
    nova = Nova(ctx.connect())
    gate = Gate(engine, nova, cloud, ctx.power_lookup(), actor=OPERATOR,
                rules=rules_from_config(ctx.config), report=ctx.report,
                pending_s=settings.power_timeout, wait_s=settings.power_timeout,
                poll=max(min(settings.poll_interval, 1.0), 0.05))
    guarded = GuardedPower(engine, nova, cloud, ctx.report, settings.power_timeout,
                           settings.poll_interval, gate=gate)
    return guarded, LeaseKeeper(engine, cloud, settings.lease_ttl, key=gate.key,
                                report=ctx.report)


def _lost(exc: LeaseLostError) -> ConsolidatorError:
    return ConsolidatorError(f"stopped: {exc}; nothing further was sent")


def power_on(ctx: AppContext, name: str, *, force: bool = False) -> str:
    """Power the host on through the guarded path under the executor lease: the BMC on, its
    forced-down mark cleared, a nova-compute heartbeat awaited, and the service enabled again
    if consolidator (or the operator's 'hosts power off --force') disabled it; each step
    journaled. A shutdown still pending makes it wait for the BMC to read off; with force,
    one whose BMC still reads on is ended first (the operator knows it will not happen).
    The state its BMC then reports."""
    host = resolve_host(read_cloud(ctx).cluster, name)
    driver = _driver(ctx, host)
    guarded, keeper = _guarded(ctx)
    with keeper as guard:
        guarded.guard = guard
        try:
            if force and guarded.gate is not None:
                problem = guarded.gate.end_pending(
                    host, read_power(driver), "the operator ended its pending shutdown "
                    "(hosts power on --force): its BMC still read on")
                if problem is not None:
                    raise ConsolidatorError(problem)
            problem = guarded.power_on(None, host, driver, [], only_ours=True)
        except LeaseLostError as exc:
            raise _lost(exc) from None
    if problem is not None:
        notify(ctx, "power.on", host=host.name, state="failed", result=problem)
        raise ConsolidatorError(f"{host.name}: {problem}")
    state = driver.power_state()
    notify(ctx, "power.on", host=host.name, state="succeeded", result=f"the BMC reads {state}")
    return state


def power_off(ctx: AppContext, name: str, *, force: bool,
              confirm: Callable[[str], bool]) -> str:
    """Power an empty host off outside a plan, through the guarded path under the executor
    lease (renewed while the shutdown runs); the BMC's state."""
    if not force:
        raise UsageError("powering a host off outside a plan needs --force (the same checks "
                         "as a plan's still run); or make a plan with 'consolidator plan'")
    host = resolve_host(read_cloud(ctx).cluster, name)
    driver = _driver(ctx, host)
    guarded, keeper = _guarded(ctx)
    problem = guarded.not_empty(host)
    if problem is not None:
        raise ConsolidatorError(f"refusing to power off {host.name}: {problem}")
    if not confirm(f"power off {host.name}?"):
        raise UsageError("not confirmed")
    since = journal_mark(ctx)
    with keeper as guard:
        guarded.guard = guard
        try:
            problem = guarded.power_off(None, host, driver, OPERATOR_REASON)
        except LeaseLostError as exc:
            rescues_after(ctx, since, guard.holder)
            raise _lost(exc) from None
    notify(ctx, "power.off", host=host.name, state="failed" if problem else "succeeded",
           result=problem or "powered off by an operator (hosts power off --force)")
    rescues_after(ctx, since, guard.holder)     # a power-off that must not stand: undone
    if problem is not None:
        raise ConsolidatorError(f"refusing to power off {host.name}: {problem}")
    return driver.power_state()
