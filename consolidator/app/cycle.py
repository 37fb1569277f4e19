"""The daemon's cycle and its power-on paths, as functions of where they run.

The daemon (daemon.py) runs them against the live cloud; a trace replay (app/replay.py) runs
the same functions against its simulated cloud on a simulated clock. What differs between the
two is only what ``CloudPorts`` gives: how the cloud is read and a snapshot stored, how an
approved plan runs, how relief runs at the end of a cycle, and how the capacity watch reads
usage (Prometheus, or the trace).

A cycle resumes any plan a crash left running, puts back in service the hosts a plan that no
longer runs left disabled and on (app/abandoned_hosts.py), snapshots the cloud, computes the
spare-host target from the padding schedule, plans (superseding older proposed plans),
applies the plan if auto_apply is on, relieves overloaded hosts, then powers on the most
capable hosts consolidator powered off when fewer spare hosts are up than the target (the
morning ramp).
The capacity watch powers hosts on between cycles when the free capacity of the powered hosts
falls below the padding, or usage at confidence with its trend nears their cores.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from consolidator.app.abandoned_hosts import put_back_in_service
from consolidator.app.context import AppContext
from consolidator.app.database import prune_if_configured
from consolidator.app.interrupted import mark_interrupted, triage_running
from consolidator.app.leadership import LeaseHeldError, refuse_while_executor_runs
from consolidator.app.pending_shutdowns import confirm_shutdowns
from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.power_readings import watts_off
from consolidator.app.relief import ReliefRun
from consolidator.app.review import approve, cancel, power_on_plan
from consolidator.app.rollback import bmc_power
from consolidator.app.usage_power import UsageReads, cool_down, usage_power_on
from consolidator.core.maintenance import drained_by
from consolidator.core.model import Cluster, Host
from consolidator.core.padding import spare_target
from consolidator.core.rollback_plan import is_ours
from consolidator.core.wording import plural

if TYPE_CHECKING:
    from consolidator.app.apply import Outcome
    from consolidator.app.settings import DaemonSettings
    from consolidator.core.padding import Window
    from consolidator.openstack.inventory import Inventory
    from consolidator.store.snapshots import Snapshot

#: The daemon's logger: these are the daemon's lines, wherever the cycle runs.
LOG = logging.getLogger("consolidator.daemon")


def _go_on() -> None:
    """Nothing stops the work."""


@dataclass
class CloudPorts:
    """Where a cycle and the capacity watch read and act: the daemon's live cloud or a
    replay's simulated one."""

    #: The cloud as Nova says now (power as Nova and the BMCs say), not stored.
    read: Callable[[], Inventory]
    #: Read the cloud and store it as a snapshot.
    snapshot: Callable[[], Snapshot]
    #: Run an approved plan with the executor.
    execute: Callable[[str], Outcome]
    #: Relief at the end of a cycle (the daemon's relieve_now).
    relieve: Callable[[], ReliefRun | None]
    #: Raises when the work must stop (the daemon lost its lease).
    check: Callable[[], None] = _go_on
    #: True when the daemon is stopping: start no power-on.
    stopping: Callable[[], bool] = lambda: False
    #: Given the snapshot's power readings (host -> W), e.g. for the metrics exporter.
    observe_power: Callable[[dict[str, float]], None] | None = None
    #: How the capacity watch reads usage; None: the live cloud and Prometheus.
    usage: UsageReads | None = None


@dataclass
class CycleResult:
    """What one cycle did."""

    snapshot_id: str = ""
    plan_id: str = ""
    spare_target: int = 0
    migrations_planned: int = 0
    outcome: Outcome | None = None
    powered_on: list[str] = field(default_factory=list)
    #: Hosts a plan no longer running had left disabled and on, enabled (app/abandoned_hosts.py).
    back_in_service: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    skipped: str = ""
    #: Why the cycle failed (an error, or its apply refused), in one line; "" if it did not.
    failed: str = ""
    hosts: dict[str, int] = field(default_factory=dict)   # active, spare, powered_off
    watts_saved: float = 0.0    # the powered-off hosts' idle draw, estimated as plans do
    relief: ReliefRun | None = None     # the relief at the end of the cycle


def run_cycle(ctx: AppContext, settings: DaemonSettings, windows: list[Window],
              now: datetime, ports: CloudPorts) -> CycleResult:
    """One cycle at `now` (see the module's docstring)."""
    resume_interrupted(ctx, ports.execute, auto_apply=settings.auto_apply)
    ports.check()
    result = CycleResult(spare_target=spare_target(windows, now, settings.spare))
    if not ports.stopping():
        result.back_in_service = put_back_in_service(ctx, ports.read, ports.execute,
                                                     result.spare_target)
    ports.check()
    snap = ports.snapshot()
    result.snapshot_id = snap.info.id
    confirm_shutdowns(ctx, snap.info.key, legacy=snap.info.cloud)
    if ports.observe_power is not None:
        ports.observe_power({r.host: r.watts for r in snap.readings})
    ports.check()
    plan = make_plan(ctx, snap, PlanRequest(spare=result.spare_target,
                                            cool_down=cool_down(ctx, now)))
    draft = plan.draft
    result.plan_id, result.migrations_planned = plan.id, len(draft.migrations)
    ports.check()
    if draft.migrations or draft.power_off:
        if settings.auto_apply:
            refuse_while_executor_runs(ctx, plan.cloud)
            approve(ctx, plan.id, reason="auto_apply")
            try:
                result.outcome = ports.execute(plan.id)
            except LeaseHeldError as exc:     # an apply took the lease meanwhile
                cancel(ctx, plan.id, reason=f"refused: {exc}")
                result.failed = str(exc)
                return result
        else:
            LOG.info("plan %s proposed (%s, %s to power off): review it with "
                     "'consolidator plan show %s' and approve it with 'consolidator plan "
                     "approve %s'", plan.id, plural(len(draft.migrations), "migration"),
                     plural(len(draft.power_off), "host"), plan.id, plan.id)
    ports.check()
    result.relief = ports.relieve()
    ports.check()
    result.powered_on, live = ramp(ctx, ports, result.spare_target, spares_only=True)
    if result.powered_on:  # the read before the ramp no longer holds
        live = ports.read().cluster
    result.hosts = host_counts(live)
    result.watts_saved = watts_off(ctx, snap, [h.name for h in live.hosts if not is_up(h)])
    pruned = prune_if_configured(ctx)    # [database] keep_days
    if pruned is not None:
        LOG.info("pruned %s, %s and %s", plural(pruned.snapshots, "snapshot"),
                 plural(pruned.plans, "plan"), plural(pruned.journal, "journal row"))
    return result


def resume_interrupted(ctx: AppContext, execute: Callable[..., Outcome], *,
                       auto_apply: bool) -> None:
    """Before anything else, finish the plans a crash left running that nothing has
    overtaken, with auto_apply on; mark the others interrupted, saying why."""
    for plan_id, why_not in triage_running(ctx, ctx.cloud_name, auto_apply=auto_apply):
        if why_not is not None:
            LOG.warning("plan %s was left running and is not resumed: %s", plan_id,
                        mark_interrupted(ctx, plan_id, why_not))
            continue
        LOG.info("resuming plan %s, which was left running", plan_id)
        execute(plan_id, resume=True)


def capacity_watch_once(ctx: AppContext, ports: CloudPorts, target: int, now: datetime
                        ) -> list[str]:
    """The capacity watch's work: power hosts on when the powered hosts' free capacity falls
    below the padding (the ramp), else when usage at confidence with its trend nears their
    cores (app/usage_power.py). The hosts powered on."""
    return ramp(ctx, ports, target, spares_only=False)[0] or \
        usage_power_on(ctx, ports.execute, now=now, reads=ports.usage)


def ramp(ctx: AppContext, ports: CloudPorts, target: int, *, spares_only: bool
         ) -> tuple[list[str], Cluster]:
    """Power on the most capable hosts consolidator powered off, as many as needed;
    return them and the live cluster read before."""
    inventory = ports.read()
    power = bmc_power(ctx, inventory.cluster)   # Nova may still say 'up'
    live = Cluster(hosts=tuple(replace(h, power="off") if power.get(h.name) == "off"
                               else h for h in inventory.cluster.hosts),
                   instances=inventory.cluster.instances,
                   server_groups=inventory.cluster.server_groups)
    want = hosts_to_power_on(live, target, spares_only=spares_only)
    if not want or ports.stopping():
        return [], live
    LOG.info("powering on %s: %s", ", ".join(want),
             "fewer spare hosts are up than the padding" if spares_only
             else "the free capacity of the powered hosts is below the padding")
    plan = power_on_plan(ctx, inventory, want, target)
    outcome = ports.execute(plan.id)
    return outcome.powered_on, live


def host_counts(cluster: Cluster) -> dict[str, int]:
    """Powered hosts with instances (active), powered empty usable ones (spare), hosts down
    or off (powered_off), and those of them that hold instances (off_holding_work)."""
    up = np.array([is_up(h) for h in cluster.hosts], dtype=bool)
    usable = np.array([h.usable for h in cluster.hosts], dtype=bool)
    empty = cluster.population == 0 if len(cluster.hosts) else np.zeros(0, dtype=bool)
    return {"active": int((up & ~empty).sum()), "spare": int((up & usable & empty).sum()),
            "powered_off": int((~up).sum()), "off_holding_work": int((~up & ~empty).sum())}


def is_up(host: Host) -> bool:
    """Up in Nova and not off by its BMC: on."""
    return host.state == "up" and host.power != "off"


def ramp_candidates(cluster: Cluster) -> list[int]:
    """Hosts consolidator powered off (off by their BMC or down, disabled by us), most
    capable first; never a drained host (it is in maintenance until 'hosts undrain')."""
    rows = [h for h, host in enumerate(cluster.hosts)
            if (host.state == "down" or host.power == "off")
            and is_ours(host.disabled_reason)
            and drained_by(host.disabled_reason) is None]
    scale = np.maximum(cluster.capacity[:, :2].max(axis=0), 1.0) if len(cluster.hosts) else 1.0
    return sorted(rows, key=lambda h: (-float((cluster.capacity[h, :2] / scale).sum()), h))


def hosts_to_power_on(cluster: Cluster, target: int, *, spares_only: bool) -> list[str]:
    """The hosts to power on so that the padding holds.

    spares_only: until `target` usable hosts are up and empty (the cycle's morning ramp).
    Otherwise: until the free vCPU and memory of the usable powered hosts cover `target`
    times the median capacity of those hosts (the capacity watch).
    """
    candidates = ramp_candidates(cluster)
    if not candidates or target <= 0:
        return []
    usable = np.array([h.usable for h in cluster.hosts], dtype=bool)
    if spares_only:
        empty = usable & (cluster.population == 0)
        missing = target - int(empty.sum())
        return [cluster.hosts[h].name for h in candidates[:max(missing, 0)]]
    if not usable.any():
        return [cluster.hosts[h].name for h in candidates[:target]]
    capacity = cluster.capacity[:, :2]
    need = target * np.median(capacity[usable], axis=0)
    free = (capacity[usable] - cluster.usage[usable, :2]).sum(axis=0)
    chosen = []
    for h in candidates:
        if np.all(free >= need):
            break
        chosen.append(cluster.hosts[h].name)
        free = free + capacity[h]
    return chosen
