"""Algorithm I of paper 004: 2D first fit, emptying hosts from the end.

Hosts keep a fixed order C_1..C_N. The emptying side starts at C_N and moves down; each
instance of C_e goes to the first host C_r (r < e) with room. When the filling side meets the
emptying side there is no room below, and the host is left as it is.

Beyond the paper: a host is emptied whole or not at all (its moves are rolled back when one
instance finds no place), and the scan then goes on with C_{e-1} instead of stopping, since a
lower host may still be emptied into the hosts below it. Capacity is checked on every
Placement resource (vCPU, memory, disk), not only vCPU and memory.
"""

from __future__ import annotations

import numpy as np

from consolidator.algorithms.base import Packing, Problem, register
from consolidator.algorithms.state import PackingState


def first_true(mask: np.ndarray) -> int:
    """Index of the first True, or -1."""
    index = int(np.argmax(mask))
    return index if mask.size and mask[index] else -1


@register("firstfit", "2D first fit: empty hosts from the end, fill from the start",
          "004 (Hage, Begnum, Yazidi), algorithm I")
def firstfit(problem: Problem) -> Packing:
    """Pack by first fit over the fixed host order; return the final placement."""
    state = PackingState(problem)
    emptied: list[int] = []
    notes: list[str] = []
    names = [h.name for h in problem.cluster.hosts]
    for e in range(problem.n_hosts - 1, 0, -1):
        if not problem.emptiable[e] or state.population[e] == 0:
            continue

        def pick(item: int, feasible: np.ndarray) -> int:
            return state.choose(item, feasible, first_true(feasible))

        # Only C_1..C_{e-1}: C_r == C_e is where the filling side meets the emptying side.
        if state.try_empty(e, pick, stop=e):
            emptied.append(e)
        else:
            notes.append(f"{names[e]}: not every instance fits on the hosts before it; "
                         f"left as it is")
    return state.packing(emptied, notes)
