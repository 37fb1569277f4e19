"""Host power draw: the load model the emulated BMCs follow, idle-draw estimates from measured
readings, and a plan's saving. Pure: no I/O.

A host draws idle + (peak - idle) x load, with load its allocated vCPUs over its physical
cores (at most 1). Readings taken at snapshots give (load, watts) points per host; a line
fitted through them gives the idle draw, else the lowest reading, else the configured
[energy] idle_watts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from consolidator.core.model import Cluster, Host

#: What an emulated host without idle_watts / peak_watts in its scenario entry draws.
DEFAULT_IDLE_WATTS = 270.0
DEFAULT_PEAK_WATTS = 450.0
HOURS_PER_DAY = 24.0
#: The spread of load (fraction of the cores) a fit needs between its points.
MIN_LOAD_SPREAD = 0.05

#: How an idle estimate was made.
FIT, MEASURED, CONFIGURED = "fit", "measured", "configured"


@dataclass(frozen=True)
class Reading:
    """One host's power draw read from its BMC when a snapshot was taken."""

    host: str
    watts: float
    load: float
    source: str  # the driver that read it: ipmi | redfish


@dataclass(frozen=True)
class IdleEstimate:
    """A host's estimated idle draw and how it was made (fit, measured or configured)."""

    watts: float
    basis: str
    slope: float = 0.0
    points: int = 0


def host_load(host: Host, vcpus_used: float) -> float:
    """The load the power model uses: allocated vCPUs over physical cores, in [0, 1]."""
    if host.vcpus <= 0:
        return 0.0
    return max(0.0, min(1.0, vcpus_used / host.vcpus))


def cluster_loads(cluster: Cluster) -> dict[str, float]:
    """host name -> its load in this cluster."""
    used: dict[str, float] = {h.name: 0.0 for h in cluster.hosts}
    for inst in cluster.instances:
        if inst.host in used:
            used[inst.host] += inst.vcpus
    return {h.name: host_load(h, used[h.name]) for h in cluster.hosts}


def modelled_draw(host: Host, load: float) -> float:
    """What an emulated BMC reports for a powered host at this load."""
    idle = DEFAULT_IDLE_WATTS if host.idle_watts is None else host.idle_watts
    peak = host.peak_watts if host.peak_watts is not None else max(idle, DEFAULT_PEAK_WATTS)
    return idle + (peak - idle) * max(0.0, min(1.0, load))


def fit_line(points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """Least-squares (intercept, slope) of watts over load; None without enough spread."""
    if len(points) < 2:
        return None
    loads = [p[0] for p in points]
    if max(loads) - min(loads) < MIN_LOAD_SPREAD:
        return None
    n = len(points)
    mean_x = sum(loads) / n
    mean_y = sum(p[1] for p in points) / n
    sxx = sum((x - mean_x) ** 2 for x in loads)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    slope = sxy / sxx
    return mean_y - slope * mean_x, slope


def estimate_idle(hosts: Iterable[str], points: Mapping[str, Sequence[tuple[float, float]]],
                  fallback: float) -> dict[str, IdleEstimate]:
    """host -> its idle draw: a fitted line's intercept (never below 0, never above the lowest
    reading), else the lowest reading, else `fallback` (the configured idle watts)."""
    out: dict[str, IdleEstimate] = {}
    for host in hosts:
        seen = list(points.get(host, ()))
        if not seen:
            out[host] = IdleEstimate(fallback, CONFIGURED)
            continue
        lowest = min(w for _, w in seen)
        line = fit_line(seen)
        if line is not None and line[1] >= 0:
            out[host] = IdleEstimate(max(0.0, min(line[0], lowest)), FIT, line[1], len(seen))
        else:
            out[host] = IdleEstimate(lowest, MEASURED, 0.0, len(seen))
    return out


@dataclass(frozen=True)
class EnergySaving:
    """What powering hosts off saves: per host watts and how each was estimated."""

    per_host: Mapping[str, float]
    basis: Mapping[str, str]

    @property
    def watts(self) -> float:
        """Watts saved in all."""
        return float(sum(self.per_host.values()))

    @property
    def kwh_per_day(self) -> float:
        """kWh saved per day at that draw."""
        return self.watts * HOURS_PER_DAY / 1000.0

    @property
    def measured(self) -> tuple[str, ...]:
        """Hosts whose saving comes from their BMC's readings."""
        return tuple(h for h, b in self.basis.items() if b != CONFIGURED)

    @property
    def fell_back(self) -> tuple[str, ...]:
        """Hosts with no reading, counted at the configured idle watts."""
        return tuple(h for h, b in self.basis.items() if b == CONFIGURED)


def saving(power_off: Iterable[str], estimates: Mapping[str, IdleEstimate],
           fallback: float) -> EnergySaving:
    """The saving of powering these hosts off: each one's idle draw (their load moves)."""
    per_host: dict[str, float] = {}
    basis: dict[str, str] = {}
    for host in power_off:
        est = estimates.get(host, IdleEstimate(fallback, CONFIGURED))
        per_host[host] = round(est.watts, 1)
        basis[host] = est.basis
    return EnergySaving(per_host, basis)
