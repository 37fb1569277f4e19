"""Used Capacity at Confidence (paper 003): the metric, the chance constraint, the rankers.

A host's CPU usage is the sum of independent per-instance usages with mean mu and standard
deviation sigma. Under the Gaussian model of 003 (section 3) its UCaC at confidence alpha
(definition 1) is sum(mu) + D(alpha) sqrt(sum(sigma^2)), D(alpha) = Phi^-1(alpha), and a
host of V cores obeys the chance constraint (eq. 2, 5) when that is at most V.

Three batch packers work on item statistics alone, on empty or nonempty machines:
``best_fit_nsigma`` (the deterministic baseline BF-n-sigma of section 6), ``best_fit_ucac``
(BF-UCaC, 5.1) and ``biheu`` (the bi-level heuristic, algorithm 2). ``UCaCRanking`` is BF-UCaC
as a host ranking for the planner.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np

#: Tolerance for comparing a UCaC with a capacity.
EPS = 1e-9
#: The ranking's confidence when neither the options nor the state give one.
DEFAULT_CONFIDENCE = 0.999
#: The best fits drop machines too full for any item from their search this often.
REFRESH = 64


@lru_cache(maxsize=64)
def d_alpha(alpha: float) -> float:
    """D(alpha) = Phi^-1(alpha), the alpha-quantile of the standard normal."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {alpha!r}")
    return NormalDist().inv_cdf(alpha)


def ucac(mu_sum: Any, var_sum: Any, alpha: float) -> Any:
    """UCaC = sum(mu) + D(alpha) sqrt(sum(sigma^2)); scalars or arrays."""
    return mu_sum + d_alpha(alpha) * np.sqrt(var_sum)


def fits(mu_sum: Any, var_sum: Any, capacity: Any, alpha: float) -> Any:
    """The chance constraint sum(mu) + D(alpha) sqrt(sum(sigma^2)) <= V; scalars or arrays."""
    return ucac(mu_sum, var_sum, alpha) <= capacity + EPS


@dataclass(frozen=True)
class UCaCRanking:
    """BF-UCaC (003, 5.1): the feasible host with the highest UCaC after, within V."""

    confidence: float | None = None
    name: str = "ucac"

    def alpha(self, state: Any) -> float:
        """The ranking's own confidence, else the state's, else DEFAULT_CONFIDENCE."""
        if self.confidence is not None:
            return self.confidence
        alpha = getattr(state, "confidence", None)
        return DEFAULT_CONFIDENCE if alpha is None else float(alpha)

    def choose(self, state: Any, item: int, feasible: np.ndarray) -> int:
        """Host row, or -1 when no feasible host keeps the chance constraint with the item.

        Without state.cpu_limit (Placement's capacity model) there is no chance constraint:
        the feasible host of highest UCaC after wins. Without usage statistics the item's
        mean is its vCPUs and its deviation 0, as PackingState assumes.
        """
        problem = state.problem
        if problem.usage_mean is None:
            mean, std = float(problem.demand[item, 0]), 0.0
        else:
            mean = float(problem.usage_mean[item])
            std = 0.0 if problem.usage_std is None else float(problem.usage_std[item])
        after = ucac(state.usage_mu + mean, state.usage_var + std * std, self.alpha(state))
        ok = feasible if state.cpu_limit is None else feasible & (after <= state.cpu_limit + EPS)
        if not ok.any():
            return -1
        return int(np.argmax(np.where(ok, after, -np.inf)))


def make_ucac(options: Mapping[str, Any]) -> UCaCRanking:
    """The ucac ranking; option confidence (default: the state's, else 0.999)."""
    raw = options.get("confidence")
    if raw is None:
        return UCaCRanking()
    alpha = float(raw)
    d_alpha(alpha)  # validates
    return UCaCRanking(confidence=alpha)


# -- batch placement on item statistics (section 5 and 6 of 003) -----------------------


@dataclass(frozen=True)
class Batch:
    """Where a batch went: machine row per item (rows past the initial ones are new)."""

    assignment: np.ndarray   # (M,) int64
    machines: int            # machines holding anything afterwards, old and new


def _initial(values: np.ndarray | None) -> np.ndarray:
    return np.zeros(0) if values is None else np.array(values, dtype=np.float64)


def _used(loads: np.ndarray, assignment: np.ndarray) -> int:
    rows = int(assignment.max()) + 1 if assignment.size else 0
    used = np.zeros(max(rows, len(loads)), dtype=bool)
    used[:len(loads)] = loads > 0
    used[assignment] = True
    return int(used.sum())


def _best_fit(mu: np.ndarray, var: np.ndarray, d: float, capacity: float,
              c0: np.ndarray, b0: np.ndarray) -> np.ndarray:
    """Best fit on c + m + d sqrt(b + v) <= capacity, in order; a new row when none fits.

    Rows too full for the smallest item are dropped from the search every REFRESH items.
    """
    assignment = np.empty(len(mu), dtype=np.int64)
    c = np.concatenate([c0, np.zeros(len(mu))])
    b = np.concatenate([b0, np.zeros(len(mu))])
    limit = capacity + EPS
    floor_m, floor_v = (float(mu.min()), float(var.min())) if len(mu) else (0.0, 0.0)

    def live(rows: np.ndarray) -> np.ndarray:
        result: np.ndarray = rows[c[rows] + floor_m + d * np.sqrt(b[rows] + floor_v) <= limit]
        return result

    alive = live(np.arange(len(c0)))
    n_rows = len(c0)
    for j, (m, v) in enumerate(zip(mu.tolist(), var.tolist(), strict=True)):
        row = -1
        if alive.size:
            after = np.sqrt(b[alive] + v)
            after *= d
            after += c[alive]
            after[after > limit - m] = -1.0
            k = int(after.argmax())
            if after[k] >= 0:
                row = int(alive[k])
        if row < 0:
            row, n_rows = n_rows, n_rows + 1
            alive = np.append(alive, row)
        c[row] += m
        b[row] += v
        assignment[j] = row
        if j % REFRESH == REFRESH - 1:
            alive = live(alive)
    return assignment


def best_fit_nsigma(mu: np.ndarray, sigma: np.ndarray, capacity: float, n_sigma: float,
                    initial_size: np.ndarray | None = None) -> Batch:
    """BF-n-sigma: items of size mu + n sigma, summed linearly, best fit in arrival order.

    initial_size holds each existing machine's load in the same terms (sum of mu + n sigma).
    """
    size = np.asarray(mu, dtype=np.float64) + n_sigma * np.asarray(sigma, dtype=np.float64)
    if size.size and size.max() > capacity + EPS:
        raise ValueError("an item is larger than an empty machine")
    load = _initial(initial_size)
    assignment = _best_fit(size, np.zeros_like(size), 0.0, capacity, load, np.zeros_like(load))
    return Batch(assignment, _used(load, assignment))


def best_fit_ucac(mu: np.ndarray, sigma: np.ndarray, capacity: float, alpha: float,
                  initial_mu: np.ndarray | None = None,
                  initial_var: np.ndarray | None = None) -> Batch:
    """BF-UCaC (5.1): each item, in arrival order, to the machine of highest UCaC after, <= V."""
    mu = np.asarray(mu, dtype=np.float64)
    var = np.asarray(sigma, dtype=np.float64) ** 2
    d = d_alpha(alpha)
    if mu.size and (mu + d * np.sqrt(var)).max() > capacity + EPS:
        raise ValueError("an item does not fit an empty machine")
    c = _initial(initial_mu)
    b = _initial(initial_var) if initial_var is not None else np.zeros_like(c)
    assignment = _best_fit(mu, var, d, capacity, c, b)
    return Batch(assignment, _used(c, assignment))


def max_count(mu: float, var: float, d: float, room: float, base_var: float,
              limit: int) -> int:
    """Largest w in [0, limit] with w mu + d sqrt(w var + base_var) <= room (alg. 2, line 6)."""
    def ok(w: int) -> bool:
        return w * mu + d * math.sqrt(w * var + base_var) <= room + EPS

    if limit <= 0 or not ok(1):
        return 0
    if mu <= 0:
        return limit if ok(limit) else _search(ok, limit)
    if var > 0:
        # s = sqrt(w var + B) solves mu s^2 + d var s - (room var + B mu) = 0.
        s = (-d * var + math.sqrt((d * var) ** 2 + 4 * mu * (room * var + base_var * mu))) \
            / (2 * mu)
        w = int(min(limit, max(0.0, (s * s - base_var) / var)))
    else:
        w = int(min(limit, max(0.0, (room - d * math.sqrt(base_var)) / mu)))
    while w < limit and ok(w + 1):
        w += 1
    while w > 0 and not ok(w):
        w -= 1
    return w


def _search(ok: Callable[[int], bool], limit: int) -> int:
    """Largest w in [1, limit] with ok(w), for ok true at 1 and monotone."""
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def biheu(mu: np.ndarray, sigma: np.ndarray, capacity: float, alpha: float,
          initial_mu: np.ndarray | None = None,
          initial_var: np.ndarray | None = None) -> Batch:
    """BiHeu (003 algorithm 2): machines by B_i desc, services by b/mu desc, fill greedily.

    Items with equal (mu, sigma) form one service and go out in arrival order. Empty machines
    (existing or new) come after the nonempty ones.
    """
    mu = np.asarray(mu, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    d = d_alpha(alpha)
    if mu.size and (mu + d * sigma).max() > capacity + EPS:
        raise ValueError("an item does not fit an empty machine")
    c0 = _initial(initial_mu)
    b0 = _initial(initial_var) if initial_var is not None else np.zeros_like(c0)
    stats, service = (np.unique(np.stack([mu, sigma], axis=1), axis=0, return_inverse=True)
                      if mu.size else (np.zeros((0, 2)), np.zeros(0, dtype=np.int64)))
    service = service.reshape(-1)
    s_mu, s_var = stats[:, 0], stats[:, 1] ** 2
    left = np.bincount(service, minlength=len(stats))
    services = sorted(range(len(stats)), key=lambda k: (-s_var[k] / max(s_mu[k], EPS), k))
    machines = sorted(range(len(c0)), key=lambda i: (-b0[i], i))
    counts: list[tuple[int, int, int]] = []     # (machine row, service, count)
    row_iter = iter(machines)
    next_new = len(c0)
    while left.sum() > 0:
        row = next(row_iter, None)
        if row is None:
            row, next_new = next_new, next_new + 1
            c, b = 0.0, 0.0
        else:
            c, b = float(c0[row]), float(b0[row])
        for k in services:
            if left[k] == 0:
                continue
            if capacity - c < s_mu[left > 0].min():     # line 10: nothing fits any more
                break
            w = max_count(float(s_mu[k]), float(s_var[k]), d, capacity - c, b, int(left[k]))
            if w:
                counts.append((row, k, w))
                b += w * s_var[k]
                c += w * s_mu[k]
                left[k] -= w
    assignment = np.empty(len(mu), dtype=np.int64)
    queues = [np.flatnonzero(service == k) for k in range(len(stats))]
    taken = [0] * len(stats)
    for row, k, w in counts:
        assignment[queues[k][taken[k]:taken[k] + w]] = row
        taken[k] += w
    return Batch(assignment, _used(c0, assignment))
