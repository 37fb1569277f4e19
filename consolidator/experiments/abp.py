"""Reproduction of section IV of paper 000 (Tantawi & Steinder, ABP): tables II and VIII.

32 nodes of (CPU 32, MEM 256, GPU 4); pods A (2, 24, 0), B (8, 32, 2), C (16, 96, 4) arrive
as Poisson streams with exponential lifetimes, one pod placed at a time; a pod that fits
nowhere is lost. Phase I has 666 pods (A only), phase II 1334 (A and B), phase III 2000 (A, B
and C); statistics start after 60 warm-up pods.

Parameters the paper leaves open (docs/reproductions.rst explains them):

* Each active type arrives at the same rate (1 per time unit). That makes the phases equally
  long (666, 2 x 667, 3 x 667 pods) and phase III an equal mix, which gives exactly the
  analytic mu_dem and Sigma_dem of tables IV and V.
* A type's mean lifetime gives its table I CPU load: T = load * 32 nodes * 32 CPUs / cpu,
  i.e. 76.8 (A), 25.6 (B) and 12.8 (C); GPU load is then 0.4 + 0.4 = 0.8 in phase III.
* ABP smooths with alpha = 0.005 (section IV). gamma_sys and the observed gamma_dem are taken
  when pod 3961 is placed, as table VIII; utilisation is sampled at every arrival after the
  warm-up, i.e. averaged per request.
* The paper searches with BSA; here every policy is an exact argmin over the 32 nodes
  (32 candidates are cheap to score all), so no policy is handicapped by its search.
* Ties go to a uniformly random node (Kubernetes' rule, the paper's setting) by showing the
  ranking the nodes in a random order; ``ties="lowest"`` keeps the planner's lowest-row rule.
  Ties matter for Pack_3: every GPU-less pod A ties on GPU.
* Default 20 seeds: about 30 s on two cores.

The policies are the planner's own ranking objects (ranking.PrimeRanking, XBalanceRanking,
abp.ABPRanking), run on a small state that exposes capacity, free, demand and
problem.powered like PackingState; columns are (CPU, MEM, GPU) instead of Placement's.

``run`` returns exactly ``{"policies": {NAME: {"reject_pct": S,
"avg": {"cpu": S, "mem": S, "gpu": S}, "std": {...}, "gamma_sys": S}}, "gamma_dem":
{"analytic": float, "observed": S}}`` where every S is ``{"mean": float, "std": float}``
over the seeds (std with ddof 1; 0 for one seed). NAME is PACK, SPREAD, XBAL or ABP.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from consolidator.core.errors import UsageError
from consolidator.core.rankings.abp import ABPRanking, DemandStats, gamma, system_stats
from consolidator.core.rankings.baseline import PrimeRanking, XBalanceRanking
from consolidator.render import table

NODES = 32
CAPACITY = np.array([32.0, 256.0, 4.0])
RESOURCE_NAMES = ("cpu", "mem", "gpu")
#: Pod types of table I: demand (CPU, MEM, GPU) and offered CPU load.
TYPES = ("A", "B", "C")
DEMAND = np.array([[2.0, 24.0, 0.0], [8.0, 32.0, 2.0], [16.0, 96.0, 4.0]])
LOAD = np.array([0.15, 0.20, 0.20])
#: Pods per phase; phase k admits the first k + 1 types.
PHASES = (666, 1334, 2000)
WARMUP = 60
#: Table VIII is taken when this pod (1-based) is placed.
SNAPSHOT = 3961
ALPHA = 0.005
GPU = 2
#: Arrivals per time unit of each active type.
RATE = 1.0
LIFETIME = LOAD * NODES * CAPACITY[0] / (RATE * DEMAND[:, 0])
DEFAULT_SEEDS = 20
EPS = 1e-9

POLICIES: dict[str, Callable[[], Any]] = {
    "PACK": lambda: PrimeRanking("pack", GPU, pack=True),
    "SPREAD": lambda: PrimeRanking("spread", GPU, pack=False),
    "XBAL": lambda: XBalanceRanking("xbalance", np.array([1.0, 0.0, -2.0])),
    "ABP": lambda: ABPRanking(alpha=ALPHA, prime=False),
}

Trace = tuple[np.ndarray, np.ndarray, np.ndarray]


def make_trace(rng: np.random.Generator, load: float = 1.0) -> Trace:
    """Arrival times, pod types and lifetimes of one run (the same for every policy).

    load scales every type's offered load (its mean lifetime); 1.0 is table I.
    """
    active = np.concatenate([np.full(n, k + 1) for k, n in enumerate(PHASES)])
    gaps = rng.exponential(1.0 / (RATE * active))
    kinds = (rng.random(active.size) * active).astype(np.int64)
    lives = rng.exponential(load * LIFETIME[kinds])
    return np.cumsum(gaps), kinds, lives


class SimState:
    """The slice of PackingState the rankings read: capacity, free, demand, problem.powered."""

    def __init__(self, ties: np.random.Generator | None = None) -> None:
        self.capacity = np.tile(CAPACITY, (NODES, 1))
        self.free = np.asfortranarray(self.capacity.copy())
        self.demand = DEMAND
        self.problem = SimpleNamespace(powered=np.ones(NODES, dtype=bool))
        self.ties = ties
        # One persistent view, so that a ranking keyed to its state (ABP) sees one state.
        self._view = SimpleNamespace(capacity=self.capacity, free=self.free, demand=DEMAND,
                                     problem=self.problem)

    def utilisation(self) -> np.ndarray:
        """(NODES, 3) used over capacity."""
        return 1.0 - self.free / self.capacity

    def choose(self, ranking: Any, kind: int, feasible: np.ndarray) -> int:
        """The ranking's node; with a ties generator, its ties go to a uniformly random node.

        The ranking breaks ties at the lowest row, so it is shown the nodes in a random order.
        """
        if self.ties is None:
            return int(ranking.choose(self, kind, feasible))
        order = self.ties.permutation(NODES)
        self._view.capacity = self.capacity[order]
        self._view.free = np.asfortranarray(self.free[order])
        host = int(ranking.choose(self._view, kind, feasible[order]))
        return int(order[host]) if host >= 0 else -1


def simulate(ranking: Any, trace: Trace, ties: np.random.Generator | None = None
             ) -> dict[str, Any]:
    """One policy on one trace: reject %, mean utilisation and spread, gamma_sys at 3961."""
    state = SimState(ties)
    times, kinds, lives = trace
    leaving: list[tuple[float, int, int]] = []
    rejected = 0
    util_sum = np.zeros(3)
    std_sum = np.zeros(3)
    snapshot = 0.0
    for j, (now, kind, life) in enumerate(zip(times.tolist(), kinds.tolist(), lives.tolist(),
                                              strict=True)):
        while leaving and leaving[0][0] <= now:
            _, node, gone = heapq.heappop(leaving)
            state.free[node] += DEMAND[gone]
        feasible = (state.free >= DEMAND[kind] - EPS).all(axis=1)
        host = state.choose(ranking, kind, feasible)
        if host >= 0:
            state.free[host] -= DEMAND[kind]
            heapq.heappush(leaving, (now + life, host, kind))
        if j < WARMUP:
            continue
        rejected += host < 0
        util = state.utilisation()
        util_sum += util.mean(axis=0)
        std_sum += util.std(axis=0)
        if j == SNAPSHOT - 1:
            snapshot = gamma(*system_stats(util))
    samples = times.size - WARMUP
    return {"reject_pct": 100.0 * rejected / samples, "avg": util_sum / samples,
            "std": std_sum / samples, "gamma_sys": snapshot}


def observed_gamma_dem(trace: Trace) -> float:
    """gamma_dem smoothed with alpha over relative demands, when pod 3961 arrives."""
    stats = DemandStats(ALPHA)
    for kind in trace[1][:SNAPSHOT].tolist():
        stats.update(DEMAND[kind] / CAPACITY)
    return stats.gamma


def analytic_gamma_dem() -> float:
    """gamma_dem of phase III's mix (equal thirds of A, B, C), as tables IV, V and VIII."""
    v = DEMAND / CAPACITY
    mean = v.mean(axis=0)
    return gamma(mean, v.T @ v / len(v) - np.outer(mean, mean))


def _summary(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return {"mean": float(arr.mean()), "std": std}


def run(seeds: int = DEFAULT_SEEDS, seed: int = 0, ties: str = "random",
        load: float = 1.0) -> dict[str, Any]:
    """Every policy on `seeds` traces (seeds seed..seed+seeds-1): mean and stdev per metric.

    ties: "random" (Kubernetes' rule, the default) or "lowest" (the planner's rule);
    load scales table I's offered loads (1.0, the default, is the paper's).
    """
    if ties not in ("random", "lowest"):
        raise UsageError(f"ties: choose random or lowest, not {ties!r}")
    per: dict[str, list[dict[str, Any]]] = {name: [] for name in POLICIES}
    observed: list[float] = []
    for i in range(seeds):
        trace = make_trace(np.random.default_rng(seed + i), load)
        observed.append(observed_gamma_dem(trace))
        for k, (name, factory) in enumerate(POLICIES.items()):
            rng = np.random.default_rng([seed + i, k]) if ties == "random" else None
            per[name].append(simulate(factory(), trace, rng))
    policies: dict[str, Any] = {}
    for name, runs in per.items():
        policies[name] = {
            "reject_pct": _summary([r["reject_pct"] for r in runs]),
            "avg": {res: _summary([r["avg"][k] for r in runs])
                    for k, res in enumerate(RESOURCE_NAMES)},
            "std": {res: _summary([r["std"][k] for r in runs])
                    for k, res in enumerate(RESOURCE_NAMES)},
            "gamma_sys": _summary([r["gamma_sys"] for r in runs]),
        }
    return {"policies": policies,
            "gamma_dem": {"analytic": analytic_gamma_dem(), "observed": _summary(observed)}}


def _pm(stat: dict[str, float], digits: int = 2) -> str:
    return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"


def render(result: dict[str, Any]) -> str:
    """Tables II and VIII of 000, as mean ± stdev over the seeds."""
    names = list(result["policies"])
    pols = [result["policies"][n] for n in names]
    rows: list[list[str]] = [["Reject %"] + [_pm(p["reject_pct"]) for p in pols]]
    labels = {"cpu": "CPU", "mem": "Memory", "gpu": "GPU"}
    for block, title in (("avg", "Average"), ("std", "StDev")):
        for res in RESOURCE_NAMES:
            rows.append([f"{title} {labels[res]}"] + [_pm(p[block][res]) for p in pols])
    dem = result["gamma_dem"]
    gammas = [[f"{dem['analytic']:.3f}", _pm(dem["observed"], 3)]
              + [_pm(p["gamma_sys"], 3) for p in pols]]
    head = "ABP reproduction (000 section IV), mean ± stdev over seeds"
    return "\n\n".join([
        head,
        "Table II: results summary\n" + table([""] + names, rows, align="l" + "r" * len(names)),
        "Table VIII: coefficient of variation gamma (pod 3961)\n"
        + table(["Analytic", "Observed"] + names, gammas, align="r" * (2 + len(names))),
    ])
