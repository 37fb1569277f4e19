"""Algorithm I of paper 004: 2D first fit, emptying hosts from the end.

Hosts keep a fixed order C_1..C_N. The emptying side starts at C_N and moves down; each
instance of C_e goes to the first host C_r (r < e) with room. When the filling side meets the
emptying side there is no room below, and the host is left as it is.

Beyond the paper: a host is emptied whole or not at all (its moves are rolled back when one
instance finds no place), and the scan then goes on with C_{e-1} instead of stopping, since a
lower host may still be emptied into the hosts below it. Capacity is checked on every
Placement resource (vCPU, memory, disk), not only vCPU and memory.

The paper's cloud is of one host model, where any fixed order is as good as another. On a
cloud of several sizes the fixed order is largest first (by the host's share of the largest
capacity of each resource, summed; ties keep the cloud's order), so that the small hosts are
emptied into the large ones; ``-o order=given`` keeps the cloud's order as it is.
"""

from __future__ import annotations

import numpy as np

from consolidator.core.algorithms.base import Packing, Problem
from consolidator.core.algorithms.state import PackingState
from consolidator.core.errors import UsageError

#: The values of the ``order`` option.
ORDERS = ("size", "given")


def first_true(mask: np.ndarray) -> int:
    """Index of the first True, or -1."""
    index = int(np.argmax(mask))
    return index if mask.size and mask[index] else -1


def host_order(problem: Problem) -> np.ndarray:
    """C_1..C_N as host rows: largest first (option order=size, the default) or as given."""
    rows = np.arange(problem.n_hosts)
    wanted = problem.options.get("order", "size")
    if wanted not in ORDERS:
        raise UsageError(f"firstfit: order={wanted!r} is not one of {', '.join(ORDERS)}")
    if wanted == "given" or not problem.n_hosts:
        return rows
    peak = problem.capacity.max(axis=0)
    share = problem.capacity[:, peak > 0] / peak[peak > 0]
    return rows[np.argsort(-share.sum(axis=1), kind="stable")]


def firstfit(problem: Problem) -> Packing:
    """Pack by first fit over the fixed host order; return the final placement."""
    state = PackingState(problem)
    emptied: list[int] = []
    notes: list[str] = []
    names = [h.name for h in problem.cluster.hosts]
    order = host_order(problem)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    as_given = bool((order == np.arange(order.size)).all())
    for position in range(problem.n_hosts - 1, 0, -1):
        e = int(order[position])
        if not problem.emptiable[e] or state.population[e] == 0:
            continue

        def pick(item: int, feasible: np.ndarray) -> int:
            if as_given:
                return state.choose(item, feasible, first_true(feasible))
            rows = np.flatnonzero(feasible)
            return state.choose(item, feasible, int(rows[np.argmin(rank[rows])]))

        # Only C_1..C_{e-1}: C_r == C_e is where the filling side meets the emptying side.
        # In the cloud's own order that is a prefix of the host rows (the fast path).
        done = (state.try_empty(e, pick, stop=e) if as_given else
                state.try_empty(e, pick, allowed=rank < position))
        if done:
            emptied.append(e)
        else:
            notes.append(f"{names[e]}: not every instance fits on the hosts before it; "
                         f"left as it is")
    return state.packing(emptied, notes)
