"""Low demand sustained over a window, before hosts are powered off (as VMware DPM and oVirt
wait for): every demand sample of the window must be low, not one.

A sample is one stored snapshot with usage statistics: the instances' mean CPU usage (vCPUs,
from telemetry) over the physical vCPUs of the hosts that were on. The window is covered only
if a sample from before its start exists too (it gives the demand at the start); that sample
and every later one must be at or below the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class DemandSample:
    """The cloud's CPU demand when a snapshot was taken, as a fraction of the powered-on
    hosts' physical vCPUs."""

    taken_at: datetime
    demand: float


def cpu_demand(cpu_means: Sequence[float], host_vcpus: Sequence[int]) -> float:
    """Mean CPU usage of the instances over the physical vCPUs of the hosts that were on."""
    capacity = sum(host_vcpus)
    return sum(cpu_means) / capacity if capacity > 0 else 0.0


def not_low_for_long(samples: Sequence[DemandSample], *, now: datetime, window_minutes: float,
                     threshold: float) -> str | None:
    """Why demand has not stayed at or below `threshold` over the last `window_minutes`
    (None if it has, or if the window is 0: no wait)."""
    if window_minutes <= 0:
        return None
    start = now - timedelta(minutes=window_minutes)
    before = [s for s in samples if s.taken_at < start]
    if not before:
        return (f"no demand sample from before the {window_minutes:g}-minute low-demand window "
                f"([power] low_demand_window): demand is not known to have stayed low")
    considered = [max(before, key=lambda s: s.taken_at)]
    considered += [s for s in samples if start <= s.taken_at <= now]
    high = [s for s in considered if s.demand > threshold]
    if high:
        worst = max(high, key=lambda s: s.demand)
        return (f"demand {worst.demand:.0%} at {worst.taken_at:%Y-%m-%d %H:%M} UTC was above "
                f"the low-demand threshold {threshold:.0%} within the last "
                f"{window_minutes:g} minutes ([power] low_demand_window)")
    return None
