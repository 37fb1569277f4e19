"""A usage trace: one CPU utilisation series per VM at a fixed step, with each VM's size.

A VM's demand at step t is its utilisation (a fraction) times its MIPS. The PlanetLab files
give 288 percentages at 5-minute steps; CloudSim gives the VMs four types in turn (2,500,
2,000, 1,000 and 500 MIPS, single core, with 870, 1,740, 1,740 and 613 MB) in four equal
quarters of the VM list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from consolidator.core.errors import ModelError

#: CloudSim's VM types: (MIPS, RAM in MB), one per quarter of the VM list.
CLOUDSIM_VM_TYPES: tuple[tuple[float, int], ...] = ((2500.0, 870), (2000.0, 1740),
                                                    (1000.0, 1740), (500.0, 613))
#: CloudSim's migration speed: RAM (MB) / (bandwidth 1 Gbit/s / 16,000) = RAM / 62.5 s.
MIGRATION_MB_PER_S = 62.5


@dataclass(frozen=True)
class Trace:
    """VMs x steps of CPU utilisation in [0, 1], and each VM's MIPS and RAM."""

    names: tuple[str, ...]
    utilisation: np.ndarray       # (V, T)
    mips: np.ndarray              # (V,)
    ram_mb: np.ndarray            # (V,)
    step_s: float = 300.0

    def __post_init__(self) -> None:
        v = len(self.names)
        if v == 0:
            raise ModelError("a trace needs at least one VM")
        if self.utilisation.ndim != 2 or self.utilisation.shape[0] != v or \
                self.utilisation.shape[1] == 0:
            raise ModelError("a trace needs the same number of samples for every VM")
        if self.mips.shape != (v,) or self.ram_mb.shape != (v,) or np.any(self.mips <= 0):
            raise ModelError("every VM of a trace needs positive MIPS")
        if np.any(self.utilisation < 0) or np.any(self.utilisation > 1) or \
                not np.all(np.isfinite(self.utilisation)):
            raise ModelError("utilisation must lie between 0 and 100 %")
        if self.step_s <= 0:
            raise ModelError("the step must be positive")

    @property
    def vms(self) -> int:
        """How many VMs."""
        return len(self.names)

    @property
    def steps(self) -> int:
        """How many samples (intervals) per VM."""
        return int(self.utilisation.shape[1])

    def demand(self) -> np.ndarray:
        """(V, T + 1) MIPS demanded at each sample time; the last sample is held to the end
        of the last interval."""
        d = self.utilisation * self.mips[:, None]
        return np.hstack([d, d[:, -1:]])

    def migration_s(self) -> np.ndarray:
        """(V,) seconds a live migration of each VM takes."""
        return self.ram_mb / MIGRATION_MB_PER_S

    def head(self, vms: int) -> Trace:
        """The first `vms` VMs."""
        return Trace(self.names[:vms], self.utilisation[:vms], self.mips[:vms],
                     self.ram_mb[:vms], self.step_s)


def with_cloudsim_types(names: Sequence[str], percent: np.ndarray,
                        step_s: float = 300.0) -> Trace:
    """A trace of percentages whose VMs take CloudSim's four types: the first quarter of
    the names the first type, and so on (CloudSim's vm / ceil(VMs / 4))."""
    quarter = -(-len(names) // len(CLOUDSIM_VM_TYPES))
    types = [CLOUDSIM_VM_TYPES[i // quarter] for i in range(len(names))]
    return Trace(tuple(names), np.asarray(percent, dtype=float) / 100.0,
                 np.array([t[0] for t in types]), np.array([t[1] for t in types], dtype=float),
                 step_s)


def end_steps(trace: Trace) -> np.ndarray:
    """(V,) the sample at which each VM ends in CloudSim (its first two zero samples in a
    row; steps + 1 if never): from then on it requests 0 MIPS, and CloudSim removes it."""
    u = trace.utilisation
    idle = np.zeros(u.shape, dtype=bool)
    idle[:, :-1] = (u[:, :-1] == 0) & (u[:, 1:] == 0)
    return np.where(idle.any(axis=1), idle.argmax(axis=1), trace.steps + 1)


def running_demand(trace: Trace, ends: np.ndarray | None = None) -> np.ndarray:
    """(V, T + 1) the demand (Trace.demand) of each VM while it runs: 0 from its end on."""
    d = trace.demand()
    if ends is None:
        return d
    return d * (np.arange(d.shape[1])[None, :] < ends[:, None])


def ended_note(policy: str, trace: Trace, ends: np.ndarray) -> tuple[str, ...]:
    """The note of a row whose VMs end as in CloudSim: how many, and the demand they took."""
    ended = ends < trace.steps
    if not ended.any():
        return ()
    demand = trace.demand()[:, :trace.steps]
    gone = 1 - float(running_demand(trace, ends)[:, :trace.steps].sum()) / \
        max(float(demand.sum()), 1e-9)
    return (f"{policy}: as in CloudSim 3.0.3, a VM that asks for no CPU ends: "
            f"{int(ended.sum()):,} of {trace.vms:,} VMs ended, with {gone:.1%} of "
            f"the demand, which is then neither run nor counted",)


def floor_steps(trace: Trace, joules_per_mip: float, ends: np.ndarray | None = None
                ) -> np.ndarray:
    """(T,) the physical floor of each interval in kWh (see floor_kwh)."""
    d = running_demand(trace, ends).sum(axis=0)
    result: np.ndarray = (d[:-1] + d[1:]) / 2 * trace.step_s * joules_per_mip / 3.6e6
    return result


def floor_kwh(trace: Trace, joules_per_mip: float, ends: np.ndarray | None = None) -> float:
    """The physical floor: the whole demand (of the VMs while they run, given their ends)
    served at the best efficiency any host reaches."""
    return float(floor_steps(trace, joules_per_mip, ends).sum())
