"""Adaptive Bin Packing (paper 000, section III): match the cluster's variability to the demand's.

ABP places an instance on the feasible host n that minimises (gamma_sys(n) - gamma_dem)^2
(eq. 4), where gamma is the Albert-Zhang multivariate coefficient of variation (eq. 3):

* gamma_dem comes from exponentially smoothed statistics of the relative demand d_r / cmax_r
  (III.C step 1), updated once per arrival, i.e. once per ``choose`` call;
* gamma_sys(n) is over the hosts' utilisation vectors u = g / c after placing on n. Placing
  on n changes only row n, so every candidate is scored at once by a rank-one update of one
  mean and covariance: O(N R^2) per placement, never a whole recomputation per candidate.

Choices where the paper is silent (see docs/reproductions.rst):

* The smoothed second moment is kept and the covariance derived from it (III.C step c read
  as Sigma = M - nu nu'; subtracting in place would corrupt the next step b).
* The statistics start at the first sample (nu = v_1, M = v_1 v_1'), not at zero, so a
  homogeneous stream has gamma_dem = 0 from the start, as the paper says of phase I.
* Covariances are population ones (divide by N), as XBalance's sigma in ranking.py.
* gamma = 0 when mu = 0 (the paper's convention gamma_r = 0 if mu_r = 0).

For the planner (consolidation rather than arrivals): when the ranking first sees a packing
state, it smooths over the demand of every movable instance in row order, so gamma_dem
describes the population being packed; each placement then updates it as an arrival. The
statistics are keyed to the PackingState, so an algorithm that tries several packings starts
each from the same statistics and results do not depend on the order of its attempts. The
instance leaves its current host, so that row is lowered before the candidates are scored.
The hosts counted are ``problem.powered``, as XBalance in ranking.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from consolidator.core.errors import UsageError
from consolidator.core.model import RESOURCES

#: Placement columns only, as the rankings in ranking.py.
R = len(RESOURCES)
#: The smoothing factor of the paper's experiments (section IV, table V).
DEFAULT_ALPHA = 0.005


def gamma(mean: np.ndarray, cov: np.ndarray) -> float:
    """Albert-Zhang coefficient sqrt(mu' S mu / (mu' mu)^2) (eq. 3); 0 when mu = 0."""
    norm = float(mean @ mean)
    if norm <= 0.0:
        return 0.0
    return float(np.sqrt(max(float(mean @ cov @ mean), 0.0)) / norm)


@dataclass
class DemandStats:
    """Exponentially smoothed mean and covariance of relative demand (III.C step 1)."""

    alpha: float = DEFAULT_ALPHA
    mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    moment: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    count: int = 0

    def update(self, relative: np.ndarray) -> None:
        """Include one arrival's relative demand v = d / cmax (steps a and b)."""
        v = np.asarray(relative, dtype=np.float64)
        if self.count == 0:
            self.mean, self.moment = v.copy(), np.outer(v, v)
        else:
            a = self.alpha
            self.mean = (1.0 - a) * self.mean + a * v
            self.moment = (1.0 - a) * self.moment + a * np.outer(v, v)
        self.count += 1

    @property
    def cov(self) -> np.ndarray:
        """Sigma_dem = M - nu nu' (step c)."""
        return self.moment - np.outer(self.mean, self.mean)

    @property
    def gamma(self) -> float:
        """gamma_dem(t) (step d); 0 before any arrival."""
        return gamma(self.mean, self.cov) if self.count else 0.0


def system_stats(util: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean vector and population covariance of (N, R) utilisation rows across hosts."""
    if util.shape[0] == 0:
        return np.zeros(util.shape[1]), np.zeros((util.shape[1], util.shape[1]))
    mean = util.mean(axis=0)
    centred = util - mean
    return mean, centred.T @ centred / util.shape[0]


def gamma_sys_all(now: np.ndarray, after: np.ndarray, members: np.ndarray) -> np.ndarray:
    """(H,) gamma_sys(n) for every candidate n at once, by rank-one updates: O(H R^2).

    now/after are (H, R) utilisation before and after placing on each host; members (H,) bool
    marks the hosts the statistics run over (a non-member candidate joins them).
    """
    w = members.astype(np.float64)
    n = float(w.sum())
    mean, cov = system_stats(now[members])
    size = n + 1.0 - w                              # hosts counted after placing on n
    y = after - mean                                # new row, centred on the old mean
    x = now - mean                                  # old row (removed if a member)
    shift = y - w[:, None] * x                      # sum of the new rows, centred
    new_mean = mean + shift / size[:, None]
    spread = n * np.einsum("hr,rs,hs->h", new_mean, cov, new_mean)
    spread += (new_mean * y).sum(axis=1) ** 2 - w * (new_mean * x).sum(axis=1) ** 2
    quad = spread / size - ((new_mean * shift).sum(axis=1) / size) ** 2
    norm = (new_mean * new_mean).sum(axis=1)
    out = np.zeros(now.shape[0])
    ok = norm > 0.0
    out[ok] = np.sqrt(np.maximum(quad[ok], 0.0)) / norm[ok]
    return out


def gamma_sys_full(now: np.ndarray, after: np.ndarray, members: np.ndarray) -> np.ndarray:
    """(H,) gamma_sys(n) by recomputing the statistics per candidate (reference for tests)."""
    out = np.zeros(now.shape[0])
    for host in range(now.shape[0]):
        util = now.copy()
        util[host] = after[host]
        rows = members.copy()
        rows[host] = True
        out[host] = gamma(*system_stats(util[rows]))
    return out


def _best(scores: np.ndarray, feasible: np.ndarray) -> int:
    """Row of the lowest score among feasible hosts (first on ties), or -1 (as ranking.best)."""
    if not feasible.any():
        return -1
    return int(np.argmin(np.where(feasible, scores, np.inf)))


def _safe(values: np.ndarray) -> np.ndarray:
    """Capacities with zeros replaced by 1, for division."""
    return np.where(values > 0, values, 1.0)


class ABPRanking:
    """ABP (000 III): the feasible host whose gamma_sys after placing is closest to gamma_dem."""

    name = "abp"

    def __init__(self, alpha: float = DEFAULT_ALPHA, prime: bool = True) -> None:
        if not 0.0 < alpha <= 1.0:
            raise UsageError(f"abp: alpha must be in (0, 1], got {alpha}")
        self.alpha = alpha
        self.prime = prime
        self.demand = DemandStats(alpha)
        self.last_gamma_sys = 0.0
        self._state: Any = None
        self._scale = np.ones(R)

    def _begin(self, state: Any) -> None:
        """New packing state: reset, and prime with the movable instances if asked."""
        self._state = state
        self._scale = _safe(state.capacity[:, :R].max(axis=0))
        self.demand = DemandStats(self.alpha)
        movable = getattr(state.problem, "movable", None)
        if self.prime and movable is not None:
            for row in np.nonzero(movable)[0].tolist():
                self.demand.update(state.demand[row, :R] / self._scale)

    def observe(self, state: Any, item: int) -> float:
        """Step 1: include the arriving item's demand; return gamma_dem(t)."""
        if state is not self._state:
            self._begin(state)
        self.demand.update(state.demand[item, :R] / self._scale)
        return self.demand.gamma

    def scores(self, state: Any, item: int) -> np.ndarray:
        """(H,) gamma_sys(n) for the item on each host (step 2); the item leaves its host."""
        cap = _safe(state.capacity[:, :R])
        now = (state.capacity[:, :R] - state.free[:, :R]) / cap
        d = state.demand[item, :R]
        host_of = getattr(state, "host_of", None)
        if host_of is not None and 0 <= int(host_of[item]) < now.shape[0]:
            source = int(host_of[item])
            now[source] -= d / cap[source]
        return gamma_sys_all(now, now + d / cap, np.asarray(state.problem.powered, dtype=bool))

    def choose(self, state: Any, item: int, feasible: np.ndarray) -> int:
        """min (gamma_sys(n) - gamma_dem)^2 over feasible hosts (eq. 4), exhaustively."""
        target = self.observe(state, item)
        if not feasible.any():
            return -1
        sys = self.scores(state, item)
        host = _best((sys - target) ** 2, feasible)
        self.last_gamma_sys = float(sys[host])
        return host


def make_abp(options: Mapping[str, Any]) -> ABPRanking:
    """ABP from ranking options: alpha (default 0.005, the paper's section IV value)."""
    raw = options.get("alpha", DEFAULT_ALPHA)
    try:
        alpha = float(raw)
    except (TypeError, ValueError):
        raise UsageError(f"abp: alpha must be a number, got {raw!r}") from None
    return ABPRanking(alpha=alpha)
