"""Usage-driven power, the use cases: the capacity watch on usage at confidence and its
trend, and the cool-down the daemon's plans keep (core/usage_power.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from consolidator.app.context import AppContext
from consolidator.app.relief import with_bmc
from consolidator.app.review import power_on_plan
from consolidator.app.settings import ReliefSettings, relief_settings
from consolidator.app.snapshots import read_cloud
from consolidator.core.cpu_speed import speed_map
from consolidator.core.errors import ConsolidatorError
from consolidator.core.relief import physical_cores, power_on_order
from consolidator.core.usage_power import Need, hosts_for_need, need_of, predicted_rise
from consolidator.store.journal import power_actions

if TYPE_CHECKING:
    from consolidator.execution.executor import Outcome
    from consolidator.openstack.inventory import Inventory

LOG = logging.getLogger(__name__)

#: Points the trend is fitted on.
TREND_POINTS = 30


def cool_down(ctx: AppContext, now: datetime) -> tuple[Mapping[str, str], int | None]:
    """(hosts powered on too recently to power off -> why, power actions still allowed this
    hour or None), from the journal's power actions."""
    rules = relief_settings(ctx.config).cool_down
    if rules.min_on_time_s <= 0 and rules.max_per_hour <= 0:
        return {}, None
    since = now - max(timedelta(hours=1), timedelta(seconds=rules.min_on_time_s))
    rows = [r for r in power_actions(ctx.engine(), cloud=ctx.cloud_name or None, since=since)
            if r.created_at <= now]
    powered_on = {r.target: r.created_at for r in rows if r.action == "power_on"}
    return rules.holds(powered_on, now), rules.budget([r.created_at for r in rows], now)


def trend_rise(settings: ReliefSettings) -> float:
    """The rise of the cloud's usage its recent trend predicts over the lookahead; 0 without
    a trend query or when Prometheus has too little history (logged)."""
    from consolidator.telemetry.prometheus import query_total

    if settings.source is None or not settings.trend_query or settings.lookahead <= 0:
        return 0.0
    end = time.time()
    step = max(settings.trend_window / TREND_POINTS, 1.0)
    try:
        points = query_total(settings.source, settings.trend_query,
                             end - settings.trend_window, end, step)
    except ConsolidatorError as exc:
        LOG.warning("capacity watch: no trend: %s", exc)
        return 0.0
    return predicted_rise([t for t, _ in points], [v for _, v in points], settings.lookahead)


@dataclass(frozen=True)
class UsageReads:
    """Where the capacity watch reads usage, when not from the live cloud and Prometheus (a
    trace replay reads its trace): the cloud with each instance's usage statistics as the
    [relief] queries would give them, the usage's rise over the lookahead, and which hosts
    may be powered on (default: those with a BMC)."""

    read: Callable[[ReliefSettings], Inventory]
    rise: Callable[[ReliefSettings], float]
    powerable: Callable[[list[str]], list[str]] | None = None


def usage_need(ctx: AppContext, settings: ReliefSettings, reads: UsageReads | None = None
               ) -> tuple[Need, list[str], dict[str, float], Inventory]:
    """The need of the cloud (usage at confidence, trend) and the hosts that may come on,
    the most efficient first, with their cores x speed; and the inventory read."""
    from consolidator.app.power_readings import settle_power

    inventory = reads.read(settings) if reads else read_cloud(ctx, telemetry=settings.source)
    cluster = settle_power(ctx, inventory.cluster)
    speed = speed_map(cluster, settings.cpu_speed)
    usage = replace(settings.plan.usage, speed=speed)
    rise = reads.rise(settings) if reads else trend_rise(settings)
    need = need_of(cluster, usage, rise=rise, headroom=settings.headroom,
                   pooled=settings.watch_demand == "cloud")
    speeds = np.array([speed.get(h.name, 1.0) for h in cluster.hosts])
    order = power_on_order(cluster, speeds, settings.plan.rules)
    candidates = reads.powerable(order) if reads and reads.powerable else with_bmc(ctx, order)
    cores = {h.name: physical_cores(h) * speed.get(h.name, 1.0) for h in cluster.hosts}
    return need, candidates, cores, replace(inventory, cluster=cluster)


def usage_power_on(ctx: AppContext, execute: Callable[[str], Outcome], *, now: datetime,
                   reads: UsageReads | None = None) -> list[str]:
    """Power hosts on when usage at confidence, with its trend, nears the powered cores;
    within the hour's budget of power actions. The hosts powered on. Without `reads`, usage
    comes from Prometheus: nothing is done without a [relief] Prometheus URL."""
    settings = relief_settings(ctx.config)
    if settings.source is None and reads is None:
        return []
    need, candidates, cores, inventory = usage_need(ctx, settings, reads)
    if need.short <= 0:
        return []
    want = hosts_for_need(need, candidates, cores)
    _, budget = cool_down(ctx, now)
    if budget is not None and len(want) > budget:
        LOG.warning("capacity watch: %s; [power] max_actions_per_hour allows %d more",
                    need.describe(), budget)
        want = want[:budget]
    if not want:
        LOG.warning("capacity watch: %s, and no host consolidator powered off can come on",
                    need.describe())
        return []
    LOG.info("powering on %s: %s", ", ".join(want), need.describe())
    plan = power_on_plan(ctx, inventory, want, 0, why=f"usage: {need.describe()}")
    return list(execute(plan.id).powered_on)
