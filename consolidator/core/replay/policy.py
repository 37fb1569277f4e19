"""How a policy meets the replay: a start placement, then one decision per sample."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from consolidator.core.replay.datacentre import DataCentre
from consolidator.core.replay.metrics import Meter, ReplayResult
from consolidator.core.replay.trace import Trace


class Policy(Protocol):
    """A consolidation policy driven by the replay's clock."""

    name: str
    #: Hosts draw full power whatever their load (no power management).
    full_power: bool

    def start(self, trace: Trace, dc: DataCentre) -> tuple[np.ndarray, np.ndarray]:
        """The placement (host row per VM) and the powered hosts before the first sample."""

    def step(self, k: int, placement: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The decision at sample k: the new placement and the powered hosts."""

    def notes(self) -> tuple[str, ...]:
        """What the reader of the result should know."""


def executor_migrations(policy: Policy) -> tuple[np.ndarray, np.ndarray] | None:
    """Every migration of the last decision as (VM rows, destination host rows), in the
    order they ran, where the policy reports them (``migrations_of_step``: the daemon's
    executor, a VM moved away and back counting twice); None where it does not."""
    report = getattr(policy, "migrations_of_step", None)
    return None if report is None else report()


def migrations_made(policy: Policy, moved: int) -> int:
    """The migrations of the last decision: the policy's own count where it keeps one
    (``moves``: a VM moved twice in one decision migrates twice), else the VMs moved."""
    count = getattr(policy, "moves", None)
    return moved if count is None else int(count)


def replay(trace: Trace, dc: DataCentre, policy: Policy) -> ReplayResult:
    """Run a policy over a trace on the simulated clock; its metrics."""
    demand = trace.demand()
    meter = Meter(dc, demand, trace.migration_s(), trace.step_s)
    placement, on = policy.start(trace, dc)
    for k in range(trace.steps):
        new, on = policy.step(k, placement)
        made = executor_migrations(policy)
        if made is None:
            moved = np.flatnonzero((new != placement) & (new >= 0))
            meter.migrated(k, moved, new[moved], migrations_made(policy, len(moved)))
        else:
            meter.migrated(k, made[0], made[1])
        placement = new
        meter.interval(k, placement, on, full_power=policy.full_power)
    return meter.result(policy.name, policy.notes())
