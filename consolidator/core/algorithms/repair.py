"""Replay a packing under the whole-host rule, so that every source host ends empty."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from consolidator.core.algorithms.base import Problem
from consolidator.core.algorithms.state import PackingState


def guided_whole_hosts(problem: Problem, target: np.ndarray, chosen: Sequence[int] | None = None
                       ) -> tuple[np.ndarray, list[int]]:
    """Empty, whole, the hosts a packing emptied, following its targets where still feasible.

    Starts again from the current placement: the hosts the packing emptied are closed, then
    each is emptied with PackingState.try_empty, every instance going to its target in the
    packing when that is feasible and otherwise to the feasible host with the least room left
    (best fit). A host that cannot be emptied whole stays as it was, so sources and
    destinations are disjoint and any order of the migrations is safe. Returns the placement
    and the hosts left whole.
    """
    state = PackingState(problem)
    before = np.bincount(problem.placement, minlength=problem.n_hosts)
    after = np.bincount(target, minlength=problem.n_hosts)
    if chosen is None:
        found = np.nonzero((before > 0) & (after == 0) & problem.emptiable)[0].tolist()
        chosen = sorted(found, key=lambda h: (before[h], h))
    for host in chosen:
        state.close(host)
    scale = np.where(problem.capacity > 0, problem.capacity, 1.0)
    failed: list[int] = []

    def pick(item: int, feasible: np.ndarray) -> int:
        hint = int(target[item])
        if feasible[hint]:
            return state.choose(item, feasible, hint)
        left = ((state.free - problem.demand[item]) / scale).sum(axis=1)
        return state.choose(item, feasible, int(np.argmin(np.where(feasible, left, np.inf))))

    def first(item: int) -> int:
        """The packing's target, taken at once when feasible, unless a ranking or a soft
        policy has a say in the choice."""
        if problem.ranking is not None or state.soft_ok(item) is not None:
            return -1
        return int(target[item])

    for host in chosen:
        if not state.try_empty(host, pick, first=first):
            failed.append(host)
    return state.host_of.copy(), failed
