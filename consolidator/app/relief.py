"""Relief, the use case: read the live cloud with its current usage, draft the moves that end
every overload (core/relief.py), store them as a plan, and (for the daemon) run it through
the same executor, journal and limits as any plan."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from consolidator.app.context import AppContext
from consolidator.app.review import approve
from consolidator.app.settings import ReliefSettings, relief_settings
from consolidator.app.snapshots import read_cloud, store_inventory
from consolidator.core.cpu_speed import speed_map
from consolidator.core.errors import ConsolidatorError, UsageError
from consolidator.core.model import Cluster
from consolidator.core.plan import PlanDraft, StoredPlan
from consolidator.core.relief import Overload, Relief, power_on_order, relief_draft
from consolidator.core.wording import plural
from consolidator.store.plans import save_plan
from consolidator.store.snapshots import Snapshot

if TYPE_CHECKING:
    from consolidator.execution.executor import Outcome
    from consolidator.openstack.inventory import Inventory

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReliefPlan:
    """A relief drafted for a cluster; plan (and its snapshot) None when it does nothing."""

    draft: PlanDraft
    relief: Relief
    plan: StoredPlan | None
    snapshot: Snapshot | None = None

    @property
    def overloads(self) -> tuple[Overload, ...]:
        """The overloads found."""
        return self.relief.overloads


def with_bmc(ctx: AppContext, names: list[str]) -> list[str]:
    """The hosts a BMC is configured for (only those can be powered on)."""
    try:
        lookup = ctx.power_lookup()
    except ConsolidatorError:
        return []
    return [n for n in names if lookup(n) is not None]


def draft_relief(ctx: AppContext, cluster: Cluster, settings: ReliefSettings, *,
                 powerable: Callable[[list[str]], list[str]] | None = None
                 ) -> tuple[PlanDraft, Relief]:
    """The checked relief of a cluster: moves, and hosts to power on, the most efficient
    first among those consolidator powered off and a BMC can power on (`powerable` keeps
    those of a list; default: those the context's BMC lookup knows)."""
    speed = speed_map(cluster, settings.cpu_speed)
    plan_settings = replace(settings.plan, usage=replace(settings.plan.usage, speed=speed))
    speeds = np.array([speed.get(h.name, 1.0) for h in cluster.hosts])
    names = power_on_order(cluster, speeds, settings.plan.rules)
    order = powerable(names) if powerable is not None else with_bmc(ctx, names)
    return relief_draft(cluster, plan_settings, power_on=order,
                        max_moves=settings.max_migrations,
                        trigger=settings.trigger_confidence or None)


#: Reads the cloud with each instance's current usage as relief's queries give it.
UsageRead = Callable[[ReliefSettings], "Inventory"]


def relief_plan(ctx: AppContext, *, snapshot: Snapshot | None = None,
                run_now: bool = False, read: UsageRead | None = None,
                powerable: Callable[[list[str]], list[str]] | None = None) -> ReliefPlan:
    """Draft relief for a stored snapshot, or for the live cloud read with relief's current
    usage queries (or by `read`: a trace replay reads its trace); store it as a plan when it
    does anything (the live cloud as a snapshot first): proposed for review, or approved for
    the daemon to run at once (run_now). `powerable`: see draft_relief. Relief plans
    supersede nothing."""
    from consolidator.app.power_readings import settle_power

    settings = relief_settings(ctx.config)
    inventory = None
    if snapshot is None and settings.source is None and read is None:
        raise UsageError("relief needs measured usage: set [telemetry] prometheus_url, or "
                         "give a --snapshot or --scenario whose instances have usage")
    if snapshot is None:
        inventory = read(settings) if read is not None else \
            read_cloud(ctx, telemetry=settings.source)
        cluster = settle_power(ctx, inventory.cluster)
    else:
        cluster = snapshot.cluster
    draft, relief = draft_relief(ctx, cluster, settings, powerable=powerable)
    if not draft.migrations and not draft.power_on:
        return ReliefPlan(draft, relief, None, snapshot)
    if inventory is not None:
        snapshot = store_inventory(ctx, replace(inventory, cluster=cluster))
    assert snapshot is not None
    plan = save_plan(ctx.engine(), draft, cloud=snapshot.info.cloud,
                     snapshot_id=snapshot.info.id, supersede=False)
    if run_now:
        approve(ctx, plan.id, reason="relief", supersede=False)
    return ReliefPlan(draft, relief, plan, snapshot)


@dataclass
class ReliefRun:
    """What one relief watch did."""

    overloaded: list[str] = field(default_factory=list)
    plan_id: str = ""
    migrated: int = 0
    powered_on: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    failed: int = 0


def relieve_now(ctx: AppContext, execute: Callable[[str], Outcome], *,
                auto_apply: bool = True, read: UsageRead | None = None,
                powerable: Callable[[list[str]], list[str]] | None = None,
                quiet: bool = False) -> ReliefRun:
    """Find overloaded hosts in the live cloud and run their relief at once with `execute`
    (the daemon's plan runner: the executor, its lease, journal and limits); without
    auto_apply the relief plan stays proposed. Without a Prometheus URL (or a `read`, a
    trace replay's) there is no measured usage to relieve on: nothing is done. quiet: what
    it finds and does is logged at debug level (a replay's thousands of reliefs)."""
    warn = LOG.debug if quiet else LOG.warning
    info = LOG.debug if quiet else LOG.info
    if relief_settings(ctx.config).source is None and read is None:
        return ReliefRun()
    found = relief_plan(ctx, run_now=auto_apply, read=read, powerable=powerable)
    run = ReliefRun(overloaded=[o.host for o in found.overloads],
                    unresolved=list(found.relief.unresolved))
    for overload in found.overloads:
        warn("overloaded: %s", overload.describe())
    if run.unresolved:
        warn("relief: nothing can relieve %s", ", ".join(run.unresolved))
    if found.plan is None:
        return run
    run.plan_id = found.plan.id
    what = (f"{plural(len(found.draft.migrations), 'migration')}, "
            f"{plural(len(found.draft.power_on), 'host')} to power on")
    if not auto_apply:
        info("relief plan %s proposed (%s): review it with 'consolidator plan show %s' "
                 "and approve it with 'consolidator plan approve %s'", found.plan.id, what,
                 found.plan.id, found.plan.id)
        return run
    info("relief plan %s: %s", found.plan.id, what)
    outcome = execute(found.plan.id)
    run.migrated, run.failed = len(outcome.migrated), len(outcome.failed)
    run.powered_on = list(outcome.powered_on)
    return run
