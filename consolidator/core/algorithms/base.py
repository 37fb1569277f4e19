"""What every packing algorithm shares: the problem, the result, the algorithm record.

An algorithm is a pure function ``Problem -> Packing``. The Problem carries NumPy arrays that
the constraints module derived from a Cluster; the Packing says where every instance ends up
and which hosts were emptied. The planner turns a Packing into a Plan and checks it. The
algorithms are listed, by name, in ``catalog``; no algorithm module imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from consolidator.core.model import Cluster


@dataclass(frozen=True, eq=False)
class Problem:
    """A consolidation problem in array form (H hosts, I instances, R resources).

    capacity/demand hold every Placement class of the cluster (VCPU, MEMORY_MB, DISK_GB, then
    PCPU, VGPU, CUSTOM_*), then the compatibility columns that make traits and inventory
    units capacity (constraints.compatibility_columns); an algorithm may add columns of its
    own (zones) with ``with_resources``. Packing over every column honours all of them.
    """

    cluster: Cluster
    capacity: np.ndarray        # (H, R) float64
    demand: np.ndarray          # (I, R) float64
    placement: np.ndarray       # (I,) int64: current host row
    movable: np.ndarray         # (I,) bool: may be live-migrated
    receivers: np.ndarray       # (H,) bool: may receive instances
    emptiable: np.ndarray       # (H,) bool: powered, usable, every instance movable
    powered: np.ndarray         # (H,) bool: counts as a running host
    host_zone: np.ndarray       # (H,) int64: availability-zone id
    important: np.ndarray       # (I,) bool
    anti_affinity: tuple[np.ndarray, ...] = ()   # hard groups: arrays of instance rows
    soft_affinity: tuple[np.ndarray, ...] = ()
    soft_anti_affinity: tuple[np.ndarray, ...] = ()
    spare: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    ranking: Ranker | None = None
    notes: tuple[str, ...] = ()
    #: Per-instance CPU usage statistics in vCPUs (telemetry, else the flavor fallback).
    usage_mean: np.ndarray | None = None   # (I,)
    usage_std: np.ndarray | None = None    # (I,)
    #: The chance constraint of paper 003 (capacity model "ucac"): a host takes instances while
    #: sum(mu) + Phi^-1(confidence) sqrt(sum(sigma^2)) <= cpu_limit (its physical cores).
    confidence: float | None = None
    cpu_limit: np.ndarray | None = None    # (H,)

    @property
    def n_hosts(self) -> int:
        """H."""
        return int(self.capacity.shape[0])

    @property
    def n_instances(self) -> int:
        """I."""
        return int(self.demand.shape[0])

    def with_resources(self, capacity: np.ndarray, demand: np.ndarray) -> Problem:
        """A copy with extra resource columns appended (e.g. CPU zones)."""
        from dataclasses import replace
        return replace(self, capacity=np.hstack([self.capacity, capacity]),
                       demand=np.hstack([self.demand, demand]))


@dataclass(frozen=True)
class Packing:
    """Where every instance ends up, and the hosts emptied, in the order they were emptied."""

    target: np.ndarray                  # (I,) int64 host row per instance
    emptied: tuple[int, ...]
    notes: tuple[str, ...] = ()
    #: A lower bound on the hosts in use that the algorithm proved (an exact solver's).
    proven_bound: int | None = None


class Ranker(Protocol):
    """Chooses a target host among feasible ones (rankings plug in here)."""

    name: str

    def choose(self, state: Any, item: int, feasible: np.ndarray) -> int:
        """The host row to place instance `item` on; feasible is a (H,) bool mask."""


AlgorithmFunc = Callable[[Problem], Packing]


@dataclass(frozen=True)
class Algorithm:
    """A catalogued algorithm: its CLI name, one-line description, paper and function."""

    name: str
    summary: str
    paper: str
    run: AlgorithmFunc
