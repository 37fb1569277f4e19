"""Hosts a plan keeps on are not emptied for nothing.

A packing may empty a host that the power decisions then keep on: the N+1 reserve, the last
host of a zone, a host without a BMC entry. Its migrations buy nothing. This module sends
such a host's instances back home (no move at all) wherever that leaves the hosts powered
off the same: the plan then empties a kept host only when it needs it empty.
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import NormalDist
from typing import Any

import numpy as np

from consolidator.core.algorithms.base import Problem

#: (problem, target) -> the power decisions of that target (planner.power_decisions).
Decide = Callable[[Problem, np.ndarray], Any]


def keep_home(problem: Problem, target: np.ndarray, decide: Decide,
              decided: Any = None) -> tuple[np.ndarray, Any, list[int]]:
    """The target with every kept-on emptied host given its own instances back where the
    hosts powered off stay the same, its power decisions, and the hosts given back
    (decided: the target's own decisions, if already made)."""
    decided = decided if decided is not None else decide(problem, target)
    restored: list[int] = []
    off = sorted(decided.power_off)
    home = np.bincount(problem.placement, minlength=problem.n_hosts)
    for host in sorted(decided.kept, key=lambda h: (-int(home[h]), h)):
        rows = np.flatnonzero((problem.placement == host) & (target != host))
        if rows.size == 0 or not problem.receivers[host]:
            continue
        trial = target.copy()
        trial[rows] = host
        if not fits(problem, trial, host):
            continue
        again = decide(problem, trial)
        if sorted(again.power_off) == off:
            target, decided = trial, again
            restored.append(host)
    return target, decided, sorted(restored)


def fits(problem: Problem, target: np.ndarray, host: int) -> bool:
    """Whether the instances the target puts on `host` fit it: every capacity column, the
    hard anti-affinity groups and, under the ucac capacity model, the chance constraint."""
    here = target == host
    if np.any(problem.demand[here].sum(axis=0) > problem.capacity[host] + 1e-6):
        return False
    if any(int(here[group].sum()) > 1 for group in problem.anti_affinity):
        return False
    if problem.confidence is None or problem.cpu_limit is None \
            or problem.usage_mean is None or problem.usage_std is None:
        return True
    z = NormalDist().inv_cdf(problem.confidence)
    load = problem.usage_mean[here].sum() + z * np.sqrt((problem.usage_std[here] ** 2).sum())
    return bool(load <= problem.cpu_limit[host] + 1e-6)
