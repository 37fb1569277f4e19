"""Energy: reading the hosts' draw from their BMCs at a snapshot, and each host's estimated
idle draw from the readings stored so far (the fallback where there are none)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, TypeVar

from consolidator.app.context import AppContext, host_driver
from consolidator.app.settings import idle_watts
from consolidator.core.energy_model import (
    CONFIGURED,
    IdleEstimate,
    Reading,
    cluster_loads,
    estimate_idle,
    saving,
)
from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Cluster, Host
from consolidator.core.plan import PlanDraft
from consolidator.core.wording import plural
from consolidator.store.snapshots import Snapshot, power_history

#: BMCs read at once when a snapshot is taken.
MAX_READERS = 16
T = TypeVar("T")


def _drivers(lookup: Any, hosts: Iterable[Host]) -> list[tuple[str, Any]]:
    """(host name, power driver) of each of the hosts the BMC file lists."""
    return [(h.name, d) for h in hosts for d in [host_driver(lookup, h)] if d is not None]


def _read_each(drivers: list[tuple[str, Any]], read: Callable[[Any], T]) -> list[T]:
    """read(driver) of every driver, MAX_READERS at once, in the drivers' order."""
    with ThreadPoolExecutor(max_workers=min(MAX_READERS, len(drivers))) as pool:
        return list(pool.map(lambda pair: read(pair[1]), drivers))


def settle_power(ctx: AppContext, cluster: Cluster) -> Cluster:
    """The cluster with the power of each host Nova reports down (power 'unknown') as its
    BMC reads it, on or off: the BMC, not Nova, says whether a host is on. Hosts without a
    BMC, or whose BMC cannot be read, stay unknown."""
    from consolidator.power.driver import POWER_OFF, POWER_ON
    from consolidator.power.driver import read_power as read_state

    unknown = [h for h in cluster.hosts if h.power == "unknown"]
    try:
        lookup = ctx.read_only_power_lookup() if unknown else None
    except ConsolidatorError:
        return cluster
    drivers = _drivers(lookup, unknown)
    if not drivers:
        return cluster
    states = dict(zip((name for name, _ in drivers), _read_each(drivers, read_state),
                      strict=True))
    hosts = tuple(replace(h, power=states[h.name])
                  if states.get(h.name) in (POWER_ON, POWER_OFF) else h for h in cluster.hosts)
    return Cluster(hosts=hosts, instances=cluster.instances,
                   server_groups=cluster.server_groups)


def read_power(ctx: AppContext, cluster: Cluster) -> tuple[Reading, ...]:
    """The draw of every powered host with a BMC, read at once ([energy] read_power); a host
    whose BMC has no reading or fails is left out (and counted at [energy] idle_watts)."""
    from consolidator.power.driver import read_watts

    if not ctx.config.get("energy", "read_power"):
        return ()
    loads = cluster_loads(cluster)
    try:
        lookup = ctx.read_only_power_lookup()
        drivers = _drivers(lookup, (h for h in cluster.hosts if h.power != "off"))
    except ConsolidatorError as exc:
        ctx.report(f"no power readings: {exc}")
        return ()
    if not drivers:
        return ()
    started = time.monotonic()
    watts = _read_each(drivers, read_watts)
    readings = tuple(
        Reading(host=name, watts=w, load=loads[name],
                source=str(getattr(getattr(driver, "config", None), "driver", "bmc")))
        for (name, driver), w in zip(drivers, watts, strict=True) if w is not None)
    up = {h.name for h in cluster.hosts if h.state == "up"}    # surely on: a real gap
    missing = sorted({name for name, _ in drivers} & up - {r.host for r in readings})
    fallback = (f"; no reading from {', '.join(missing)}: plans count them at their earlier "
                f"readings, else [energy] idle_watts ({idle_watts(ctx.config):g} W)"
                if missing else "")
    ctx.report(f"read the power draw of {len(readings)} of "
               f"{plural(len(drivers), 'host')} with a BMC in {time.monotonic() - started:.1f} s "
               f"({sum(r.watts for r in readings):.0f} W in all){fallback}")
    return readings


def idle_estimates(ctx: AppContext, snapshot: Snapshot) -> dict[str, IdleEstimate]:
    """host -> its idle draw, from the readings of the snapshot's cloud up to it (a line
    fitted through [energy] history snapshots), else [energy] idle_watts."""
    history: dict[str, list[tuple[float, float]]] = {}
    if not snapshot.info.cloud.startswith("scenario:"):
        history = power_history(ctx.engine(), snapshot.info.cloud,
                                before=snapshot.info.taken_at,
                                limit=ctx.config.get("energy", "history"))
    for reading in snapshot.readings:  # the snapshot's own, even if not in the history yet
        points = history.setdefault(reading.host, [])
        if (reading.load, reading.watts) not in points:
            points.append((reading.load, reading.watts))
    return estimate_idle([h.name for h in snapshot.cluster.hosts], history,
                         idle_watts(ctx.config))


def watts_off(ctx: AppContext, snapshot: Snapshot, hosts: list[str]) -> float:
    """The idle draw the hosts would have if on, as plans estimate it (readings up to the
    snapshot, else [energy] idle_watts): the watts saved by keeping them off."""
    estimates = idle_estimates(ctx, snapshot)
    fallback = idle_watts(ctx.config)
    return sum(estimates[h].watts if h in estimates else fallback for h in hosts)


def plan_for_objective(ctx: AppContext, snapshot: Snapshot, cluster: Cluster, algorithm: str,
                       objective: str, hosts_planner: Any = None, **plan_args: Any) -> PlanDraft:
    """The checked plan for the objective (hosts: the algorithm's own, or hosts_planner's
    (cluster, algorithm, **plan_args) when given; energy: the plan that powers off the most
    idle watts), with each powered-off host's estimated idle draw."""
    from consolidator.core.energy_objective import energy_plan
    from consolidator.core.planner import plan_cluster

    estimates = idle_estimates(ctx, snapshot)
    if objective == "energy":
        draft = energy_plan(cluster, algorithm, {h: e.watts for h, e in estimates.items()},
                            fallback=idle_watts(ctx.config), **plan_args)
    else:
        draft = (hosts_planner or plan_cluster)(cluster, algorithm, **plan_args)
    spent = saving(draft.power_off, estimates, idle_watts(ctx.config))
    if objective == "energy" and all(e.basis == CONFIGURED for e in estimates.values()):
        draft = replace(draft, notes=(*draft.notes, (
            f"objective energy: no host has a power reading, so every host counts at "
            f"[energy] idle_watts ({idle_watts(ctx.config):g} W) and hosts are told apart by "
            f"size alone; take a snapshot of the live cloud with its BMC file to measure them")))
    return replace(draft, host_watts=dict(spent.per_host), watts_basis=dict(spent.basis))
