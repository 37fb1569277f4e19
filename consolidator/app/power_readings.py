"""The BMCs' power readings: each host's power state and draw in watts at a snapshot, and each
host's estimated idle draw from the readings stored so far (the fallback where there are
none)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, TypeVar

from consolidator.app.context import AppContext, host_driver
from consolidator.app.settings import EnergySettings, energy_settings
from consolidator.core.energy_model import IdleEstimate, Reading, cluster_loads, estimate_idle
from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Cluster, Host
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


def read_watts(ctx: AppContext, cluster: Cluster) -> tuple[Reading, ...]:
    """The draw in watts of every powered host with a BMC, read at once ([energy] read_power);
    a host whose BMC has no reading or fails is left out (and counted at [energy] idle_watts)."""
    from consolidator.power.driver import read_watts as driver_watts

    energy = energy_settings(ctx.config)
    if not energy.read_power:
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
    watts = _read_each(drivers, driver_watts)
    readings = tuple(
        Reading(host=name, watts=w, load=loads[name],
                source=str(getattr(getattr(driver, "config", None), "driver", "bmc")))
        for (name, driver), w in zip(drivers, watts, strict=True) if w is not None)
    up = {h.name for h in cluster.hosts if h.state == "up"}    # surely on: a real gap
    missing = sorted({name for name, _ in drivers} & up - {r.host for r in readings})
    fallback = (f"; no reading from {', '.join(missing)}: plans count them at their earlier "
                f"readings, else [energy] idle_watts ({energy.idle_watts:g} W)"
                if missing else "")
    ctx.report(f"read the power draw of {len(readings)} of "
               f"{plural(len(drivers), 'host')} with a BMC in {time.monotonic() - started:.1f} s "
               f"({sum(r.watts for r in readings):.0f} W in all){fallback}")
    return readings


def idle_estimates(ctx: AppContext, snapshot: Snapshot, energy: EnergySettings
                   ) -> dict[str, IdleEstimate]:
    """host -> its idle draw, from the readings of the snapshot's cloud up to it (a line
    fitted through [energy] history snapshots), else [energy] idle_watts."""
    history: dict[str, list[tuple[float, float]]] = {}
    if not snapshot.info.cloud.startswith("scenario:"):
        history = power_history(ctx.engine(), snapshot.info.cloud,
                                before=snapshot.info.taken_at,
                                limit=energy.history)
    for reading in snapshot.readings:  # the snapshot's own, even if not in the history yet
        points = history.setdefault(reading.host, [])
        if (reading.load, reading.watts) not in points:
            points.append((reading.load, reading.watts))
    return estimate_idle([h.name for h in snapshot.cluster.hosts], history, energy.idle_watts)


def watts_off(ctx: AppContext, snapshot: Snapshot, hosts: list[str]) -> float:
    """The idle draw the hosts would have if on, as plans estimate it (readings up to the
    snapshot, else [energy] idle_watts): the watts saved by keeping them off."""
    energy = energy_settings(ctx.config)
    estimates = idle_estimates(ctx, snapshot, energy)
    return sum(estimates[h].watts if h in estimates else energy.idle_watts for h in hosts)

