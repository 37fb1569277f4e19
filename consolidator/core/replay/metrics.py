"""The metrics of a replay, accumulated interval by interval (Beloglazov & Buyya 2012, eq. 20-22
and 39).

Interval k runs from sample k to sample k + 1. The placement decided at sample k serves it, and
each VM's demand moves linearly from its sample k to its sample k + 1, as CloudSim's PlanetLab
utilisation model interpolates. A host draws the mean of its power at both ends (CloudSim's
linear interpolation); it is at 100 % CPU for the part of the interval in which its demand
exceeds its MIPS.

- SLATAH (the paper's): the mean over hosts of time at 100 % CPU / time active, over the
  hosts used (active in at least one interval): a policy that powers many hosts for a short
  time each lowers it with no fewer overloads, so each row also says how many it used, and
  the hosts' time at 100 % CPU over their active time (the same weighed by active time).
- SLATAH as CloudSim computes it: the sum over hosts of violation time / the sum of active
  time, where a host also violates while a migration comes in.
- PDM: the mean over VMs of CPU lost to migrations (10 % of its demand while it migrates) /
  CPU it requested.
- SLAV = SLATAH x PDM; ESV = energy x SLAV.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from consolidator.core.replay.datacentre import DataCentre

#: The share of a VM's CPU lost while it migrates (CloudSim: 10 %).
MIGRATION_LOSS = 0.1


@dataclass(frozen=True)
class ReplayResult:
    """What one policy did over one trace."""

    policy: str
    energy_kwh: float
    slatah: float
    slatah_cloudsim: float
    pdm: float
    migrations: int
    hosts_on: tuple[int, ...]                   # per interval
    notes: tuple[str, ...] = ()
    #: The share of the demand no host served (hosts at 100 % CPU).
    unserved: float = 0.0
    #: Per interval: the energy (kWh), the powered hosts at 100 % CPU for part of it, and
    #: the migrations made at its start.
    energy_steps: tuple[float, ...] = ()
    overloaded: tuple[int, ...] = ()
    migration_steps: tuple[int, ...] = ()
    #: The hosts active in at least one interval: the N over which SLATAH is a mean.
    hosts_used: int = 0
    #: The hosts' time at 100 % CPU over their active time: SLATAH weighed by active time
    #: (CloudSim's figure without the migrations).
    time_over: float = 0.0

    @property
    def slav(self) -> float:
        """SLATAH x PDM."""
        return self.slatah * self.pdm

    @property
    def esv(self) -> float:
        """Energy (kWh) x SLAV."""
        return self.energy_kwh * self.slav

    @property
    def hosts_on_mean(self) -> float:
        """Hosts on, averaged over the intervals."""
        return float(np.mean(self.hosts_on)) if self.hosts_on else 0.0

    def as_dict(self) -> dict[str, object]:
        """The JSON row of --format json."""
        return {"policy": self.policy, "energy_kwh": round(self.energy_kwh, 3),
                "slatah": self.slatah, "slatah_cloudsim": self.slatah_cloudsim,
                "pdm": self.pdm, "slav": self.slav, "esv": self.esv,
                "migrations": self.migrations, "hosts_on_mean": round(self.hosts_on_mean, 2),
                "hosts_used": self.hosts_used, "time_over": self.time_over}


def _unserved(start: np.ndarray, end: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """MIPS x share of an interval by which a linear load from start to end exceeds cap."""
    above_s, above_e = np.maximum(start - cap, 0), np.maximum(end - cap, 0)
    both = (above_s > 0) & (above_e > 0)
    share = _time_over(start, end, cap)
    result: np.ndarray = np.where(both, (above_s + above_e) / 2,
                                  share * np.maximum(above_s, above_e) / 2)
    return result


def _time_over(start: np.ndarray, end: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """The share of an interval in which a linear load from start to end exceeds cap."""
    over_s, over_e = start > cap, end > cap
    share = (over_s & over_e).astype(float)
    crossing = over_s ^ over_e
    span = np.where(crossing, np.abs(end - start), 1.0)
    share = np.where(over_s & ~over_e, (start - cap) / span, share)
    return np.where(~over_s & over_e, (end - cap) / span, share)


@dataclass
class Meter:
    """Accumulates energy, SLA time, migrations and hosts on over the intervals."""

    dc: DataCentre
    demand: np.ndarray            # (V, T + 1) MIPS
    migration_s: np.ndarray       # (V,)
    step_s: float
    joules: float = 0.0
    active_s: np.ndarray = field(init=False)
    over_s: np.ndarray = field(init=False)
    violation_s: np.ndarray = field(init=False)
    lost: np.ndarray = field(init=False)
    migrations: int = 0
    unserved_mips_s: float = 0.0
    hosts_on: list[int] = field(default_factory=list)
    energy_steps: list[float] = field(default_factory=list)
    overloaded: list[int] = field(default_factory=list)
    migration_steps: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        h = self.dc.hosts
        self.active_s, self.over_s, self.violation_s = np.zeros(h), np.zeros(h), np.zeros(h)
        self.lost = np.zeros(self.demand.shape[0])
        self.incoming = np.zeros(h)

    def migrated(self, k: int, vms: np.ndarray, destinations: np.ndarray,
                 count: int | None = None) -> None:
        """VMs that migrated at sample k: their CPU loss, their destinations' busy time;
        count: the migrations made, if more than the VMs (a VM moved twice)."""
        made = len(vms) if count is None else count
        self.migrations += made
        self.migration_steps.append(made)
        if len(vms) == 0:
            return
        seconds = self.migration_s[vms]
        np.add.at(self.lost, vms, MIGRATION_LOSS * self.demand[vms, k] * seconds)
        np.maximum.at(self.incoming, destinations, seconds)   # they run at once

    def interval(self, k: int, placement: np.ndarray, on: np.ndarray, *,
                 full_power: bool = False) -> None:
        """Interval k served by `placement` (host row per VM) with the hosts `on` powered;
        full_power: every powered host draws its peak (no power management)."""
        h, cap = self.dc.hosts, self.dc.capacity
        here = placement >= 0                 # a VM that ended is on no host
        rows = placement[here]
        start = np.bincount(rows, self.demand[here, k], minlength=h)
        end = np.bincount(rows, self.demand[here, k + 1], minlength=h)
        watts = self.dc.tables[:, 10] if full_power else \
            (self.dc.power(start / cap) + self.dc.power(end / cap)) / 2
        joules = float(watts[on].sum()) * self.step_s
        self.joules += joules
        self.energy_steps.append(joules / 3.6e6)
        over = _time_over(start, end, cap) * self.step_s * on
        self.overloaded.append(int((over > 0).sum()))
        self.unserved_mips_s += float((_unserved(start, end, cap) * on).sum()) * self.step_s
        self.active_s += on * self.step_s
        self.over_s += over
        self.violation_s += np.minimum(over + self.incoming * on, self.step_s)
        self.incoming[:] = 0.0
        self.hosts_on.append(int(on.sum()))

    def result(self, policy: str, notes: tuple[str, ...] = ()) -> ReplayResult:
        """The metrics so far."""
        active = self.active_s > 0
        slatah = float(np.mean(self.over_s[active] / self.active_s[active])) \
            if active.any() else 0.0
        total = float(self.active_s.sum())
        cloudsim = float(self.violation_s.sum()) / total if total else 0.0
        d = self.demand
        requested = ((d[:, :-1] + d[:, 1:]) / 2).sum(axis=1) * self.step_s
        asked = requested > 0
        pdm = float(np.mean(self.lost[asked] / requested[asked])) if asked.any() else 0.0
        total_asked = float(requested.sum())
        unserved = self.unserved_mips_s / total_asked if total_asked else 0.0
        return ReplayResult(policy, self.joules / 3.6e6, slatah, cloudsim, pdm,
                            self.migrations, tuple(self.hosts_on), notes, unserved,
                            tuple(self.energy_steps), tuple(self.overloaded),
                            tuple(self.migration_steps), int(active.sum()),
                            float(self.over_s.sum()) / total if total else 0.0)
