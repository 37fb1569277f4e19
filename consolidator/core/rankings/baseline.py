"""The baseline host rankings of paper 000 (section II): pack, spread, xbalance.

A ranking plugs into any algorithm's target choice (``PackingState.choose``). Each scores
every feasible host at once with NumPy and takes the best; ties go to the lowest host row.
Utilisation is the Placement use over capacity, u = g / c, as in 000.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from consolidator.core.errors import UsageError
from consolidator.core.model import RESOURCES

#: Placement columns only: rankings never look at algorithm-specific columns.
R = len(RESOURCES)


def utilisation_after(state: Any, item: int) -> tuple[np.ndarray, np.ndarray]:
    """(H, R) utilisation now, and (H, R) utilisation of each host if the item went there."""
    cap = state.capacity[:, :R]
    safe = np.where(cap > 0, cap, 1.0)
    used = (cap - state.free[:, :R]) / safe
    return used, used + state.demand[item, :R] / safe


def best(scores: np.ndarray, feasible: np.ndarray) -> int:
    """Row of the lowest score among feasible hosts (first on ties), or -1."""
    if not feasible.any():
        return -1
    return int(np.argmin(np.where(feasible, scores, np.inf)))


@dataclass(frozen=True)
class PrimeRanking:
    """Pack_r / Spread_r (000 II.B, II.C): least or most available prime resource left."""

    name: str
    resource: int
    pack: bool

    def choose(self, state: Any, item: int, feasible: np.ndarray) -> int:
        """Pack_r: min (a_nr - d_r) >= 0; Spread_r: max."""
        left = state.free[:, self.resource] - state.demand[item, self.resource]
        return best(left if self.pack else -left, feasible)


@dataclass(frozen=True)
class DistanceRanking:
    """Pack_dist / Spread_dist (000 II.B, II.C): the norm of the host's utilisation after."""

    name: str
    pack: bool

    def choose(self, state: Any, item: int, feasible: np.ndarray) -> int:
        """Pack_dist: max ||u(n; d)||; Spread_dist: min."""
        _, after = utilisation_after(state, item)
        norm = np.linalg.norm(after, axis=1)
        return best(-norm if self.pack else norm, feasible)


@dataclass(frozen=True)
class XBalanceRanking:
    """XBalance (000 II.D): min w' sigma(n; d), sigma the std of utilisation across hosts."""

    name: str
    weights: np.ndarray

    def choose(self, state: Any, item: int, feasible: np.ndarray) -> int:
        """Score every candidate with an O(H R) update of the cluster's sums and squares."""
        now, after = utilisation_after(state, item)
        powered = state.problem.powered
        n = max(int(powered.sum()), 1)
        total = (now * powered[:, None]).sum(axis=0)
        squares = (now ** 2 * powered[:, None]).sum(axis=0)
        new_total = total + (after - now)
        new_squares = squares + (after ** 2 - now ** 2)
        variance = np.maximum(new_squares / n - (new_total / n) ** 2, 0.0)
        return best(np.sqrt(variance) @ self.weights, feasible)


def _resource(options: Mapping[str, Any]) -> int:
    name = str(options.get("prime_resource", "vcpus"))
    if name not in RESOURCES:
        raise UsageError(f"prime_resource {name!r}: choose one of {', '.join(RESOURCES)}")
    return RESOURCES.index(name)


def _weights(options: Mapping[str, Any]) -> np.ndarray:
    raw = options.get("weights", "1,0,-1")
    values = [float(x) for x in str(raw).split(",")] if not isinstance(raw, (list, tuple)) \
        else [float(x) for x in raw]
    if len(values) != R:
        raise UsageError(f"weights: expected {R} numbers (vcpus, memory, disk), got {raw!r}")
    return np.array(values, dtype=np.float64)


#: The option of the prime-resource rankings.
PRIME = {"prime_resource": "|".join(RESOURCES)}


def make_pack(options: Mapping[str, Any]) -> PrimeRanking:
    """Pack_r from its option prime_resource (default vcpus)."""
    return PrimeRanking("pack", _resource(options), pack=True)


def make_spread(options: Mapping[str, Any]) -> PrimeRanking:
    """Spread_r from its option prime_resource (default vcpus)."""
    return PrimeRanking("spread", _resource(options), pack=False)


def make_pack_dist(options: Mapping[str, Any]) -> DistanceRanking:
    """Pack_dist (it has no options)."""
    return DistanceRanking("pack-dist", pack=True)


def make_spread_dist(options: Mapping[str, Any]) -> DistanceRanking:
    """Spread_dist (it has no options)."""
    return DistanceRanking("spread-dist", pack=False)


def make_xbalance(options: Mapping[str, Any]) -> XBalanceRanking:
    """XBalance from its option weights (default 1,0,-1: spread vCPUs, pack disk)."""
    return XBalanceRanking("xbalance", _weights(options))
