"""The chance constraint of paper 003 as a linear resource column, for packing heuristics.

A host takes instances while sum(mu) + z sqrt(sum(sigma^2)) <= its cores (z = Phi^-1 of the
confidence). Vector packing heuristics (hvp_pack) pack on linear columns only, so the square
root is bounded above by its tangent at a reference variance V (sqrt is concave, so the
tangent lies above it everywhere):

    sqrt(S) <= sqrt(V) / 2 + S / (2 sqrt(V))

and "sum over the host of (mu + z sigma^2 / (2 sqrt V)) <= cores - z sqrt(V) / 2" implies the
chance constraint: a column whose every packing is feasible, exact where a host's variance
sum is V. V is the cluster's variance per host at the lower bound on hosts (the variance a
kept host carries when the instances are spread over the fewest hosts). With z <= 0
(confidence at most one half), the square-root term is at most 0 and the column is the means.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from consolidator.core.algorithms.base import Problem
from consolidator.core.algorithms.bounds import host_lower_bound


def tangent_variance(problem: Problem, hosts: int) -> float:
    """The reference variance V: the cluster's variance sum shared by `hosts` hosts."""
    assert problem.usage_std is not None
    total = float((problem.usage_std ** 2).sum())
    return total / max(hosts, 1)


def with_chance_column(problem: Problem, hosts: int | None = None) -> Problem:
    """The problem with the chance constraint as one more linear column (unchanged without
    the constraint); `hosts` sets the reference variance (default: the lower bound)."""
    if problem.confidence is None or problem.cpu_limit is None:
        return problem
    assert problem.usage_mean is not None and problem.usage_std is not None
    z = NormalDist().inv_cdf(problem.confidence)
    mean, var = problem.usage_mean, problem.usage_std ** 2
    reference = tangent_variance(problem, hosts if hosts is not None
                                 else host_lower_bound(problem))
    if z <= 0 or reference <= 0:
        capacity, demand = problem.cpu_limit.copy(), mean.copy()
    else:
        root = float(np.sqrt(reference))
        capacity = problem.cpu_limit - z * root / 2.0
        demand = mean + z * var / (2.0 * root)
    return problem.with_resources(capacity[:, None], demand[:, None])

