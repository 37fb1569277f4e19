"""Replay a packing under the whole-host rule, so that every source host ends empty."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from consolidator.core.algorithms.base import Problem
from consolidator.core.algorithms.state import PackingState


class _Replay:
    """One replay: a state, the hosts left whole, and whether every move so far went to the
    packing's own target at once, outside the hosts `later` (then a longer prefix of the
    same order replays these hosts exactly alike, and may go on from here)."""

    def __init__(self, problem: Problem, target: np.ndarray, later: set[int]) -> None:
        self.problem, self.target, self.later = problem, target, later
        self.state = PackingState(problem)
        self.scale = np.where(problem.capacity > 0, problem.capacity, 1.0)
        self.failed: list[int] = []
        self.quick = True

    def pick(self, item: int, feasible: np.ndarray) -> int:
        """The packing's target when feasible, else best fit (least room left)."""
        self.quick = False
        state, hint = self.state, int(self.target[item])
        if feasible[hint]:
            return state.choose(item, feasible, hint)
        left = ((state.free - self.problem.demand[item]) / self.scale).sum(axis=1)
        return state.choose(item, feasible, int(np.argmin(np.where(feasible, left, np.inf))))

    def first(self, item: int) -> int:
        """The packing's target, taken at once when feasible, unless a ranking or a soft
        policy has a say in the choice."""
        if self.problem.ranking is not None or self.state.soft_ok(item) is not None:
            return -1
        hint = int(self.target[item])
        if hint in self.later:
            self.quick = False
        return hint

    def empty(self, hosts: Sequence[int]) -> None:
        """Close the hosts, then empty each whole (or leave it whole)."""
        for host in hosts:
            self.state.close(host)
        for host in hosts:
            if not self.state.try_empty(host, self.pick, first=self.first):
                self.failed.append(host)
                self.quick = False


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
    if chosen is None:
        before = np.bincount(problem.placement, minlength=problem.n_hosts)
        after = np.bincount(target, minlength=problem.n_hosts)
        found = np.nonzero((before > 0) & (after == 0) & problem.emptiable)[0].tolist()
        chosen = sorted(found, key=lambda h: (before[h], h))
    replay = _Replay(problem, target, set())
    replay.empty(chosen)
    return replay.state.host_of.copy(), replay.failed


def guided_prefixes(problem: Problem, target: np.ndarray, order: Sequence[int],
                    counts: Sequence[int]) -> dict[int, tuple[np.ndarray, list[int]]]:
    """guided_whole_hosts(problem, target, chosen=order[:count]) for each count, with one
    replay shared by the counts in increasing order for as long as every move of it went
    straight to the packing's target outside `order` (the longer prefix would make exactly
    those moves first); after any other move, the next count replays from the start."""
    later = {int(h) for h in order}
    out: dict[int, tuple[np.ndarray, list[int]]] = {}
    replay, done = None, 0
    for count in sorted(set(counts)):
        if replay is None or not replay.quick:
            replay, done = _Replay(problem, target, later), 0
        replay.empty(list(order[done:count]))
        done = count
        out[count] = (replay.state.host_of.copy(), list(replay.failed))
    return out
