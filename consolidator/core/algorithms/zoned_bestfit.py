"""Algorithm II of paper 004: 2D best fit with high/low quality CPU zones.

Each host's CPUs are split into a high-quality (HQ) and a low-quality (LQ) zone, each with its
own overbooking ratio (the paper: 24 CPUs at 2:1 and 35 at 8:1). Important instances count
against the HQ zone, the others against the LQ zone; memory is shared. In modern Nova these
zones are the dedicated (PCPU) and shared (VCPU) CPU sets, which are columns of the problem
already: so without a ``zones`` option the zones are the cloud's own, and importance only
orders the packing (important instances are placed first). The ``zones`` option ([zones] in
the config, e.g. the paper's split as the preset ``paper``) adds HQ/LQ columns instead.

In the paper (``-o order=paper``), hosts to empty are taken from the least to the most
populated; each instance goes to the most populated host with room, among the hosts more
populated than the one being emptied (the paper's C_r == C_e stop), which keeps migrations
few. On mixed hardware that order empties a large host with few instances before a small one
with many, and keeps the small hosts: by default (``order=keep-set``) the hosts to empty are
those hvp's METAHVPLIGHT search empties (it chooses them by capacity, then population, and
proves they pack), smallest first, then the others (on hosts of one model, where capacity
tells no host apart, the paper's order); they are emptied in that order, each into the
most populated host with room among the hosts later in the order. ``order=capacity`` takes
the smallest hosts first without the search.

Beyond the paper: Placement's own vCPU, memory and disk capacity is checked as well (Nova
enforces it whatever the zones say), and a host is emptied whole or not at all.
"""

from __future__ import annotations

import numpy as np

from consolidator.core.algorithms.base import Packing, Problem
from consolidator.core.algorithms.hvp import light_emptied
from consolidator.core.algorithms.state import PackingState

#: The order hosts are emptied in, by default (the -o order values: ORDERS).
DEFAULT_ORDER = "keep-set"
ORDERS = ("keep-set", "capacity", "paper")
#: The paper's zones: 24 HQ CPUs at 2:1, 35 LQ CPUs at 8:1.
PAPER_ZONES = (24.0, 2.0, 35.0, 8.0)


def zone_columns(problem: Problem) -> tuple[np.ndarray, np.ndarray] | None:
    """(H, 2) HQ/LQ vCPU capacity and (I, 2) HQ/LQ vCPU demand, or None without a zones
    option. A host whose row is NaN (no [zones] rule names it) has its cloud's zones: its
    HQ/LQ columns never bind."""
    if problem.options.get("zones") is None:
        return None
    zones = np.asarray(problem.options["zones"], dtype=np.float64).reshape(problem.n_hosts, 4)
    capacity = np.stack([zones[:, 0] * zones[:, 1], zones[:, 2] * zones[:, 3]], axis=1)
    capacity = np.where(np.isnan(capacity), float(problem.demand[:, 0].sum()) + 1.0, capacity)
    vcpus = problem.demand[:, 0]
    demand = np.stack([np.where(problem.important, vcpus, 0.0),
                       np.where(problem.important, 0.0, vcpus)], axis=1)
    return capacity, demand


def identical(problem: Problem) -> bool:
    """Every powered host has the same Placement capacity (one hardware model)."""
    rows = problem.capacity[problem.powered, :3]
    return bool(rows.size == 0 or np.all(rows == rows[0]))


def emptying_order(problem: Problem, population: np.ndarray, how: str) -> np.ndarray:
    """The hosts in the order they are emptied; the reverse is the receivers' rank.

    paper: the fewest instances first (Sort('VM_COUNT', 'ASC'), ties in host order);
    capacity: the smallest host first (its largest Placement column relative to the
    largest host's), then the fewest instances; keep-set: the hosts METAHVPLIGHT empties
    (hvp.py, which chooses them by capacity and population) first, smallest first, then the
    others (zoned_bestfit uses the paper's order instead on hosts of one model).
    """
    hosts = np.arange(problem.n_hosts)
    if how == "paper":
        return np.lexsort((hosts, population))
    scale = problem.capacity[:, :3].max(axis=0)
    scale[scale == 0] = 1.0
    size = (problem.capacity[:, :3] / scale).max(axis=1)
    if how == "capacity":
        return np.lexsort((hosts, population, size))
    chosen = np.zeros(problem.n_hosts, dtype=bool)
    chosen[list(light_emptied(problem))] = True
    return np.lexsort((hosts, population, size, ~chosen))


def zoned_bestfit(problem: Problem) -> Packing:
    """Pack into HQ/LQ CPU zones, emptying hosts in the order of -o order (keep-set: the
    hosts METAHVPLIGHT empties, on mixed hardware; paper: the least populated first)."""
    columns = zone_columns(problem)
    zoned = problem.with_resources(*columns) if columns is not None else problem
    state = PackingState(zoned)
    initial = state.population.copy()
    hosts = np.arange(problem.n_hosts)
    how = str(problem.options.get("order", DEFAULT_ORDER))
    if how == "keep-set" and identical(problem):
        how = "paper"
    # The receivers' rank: the reverse of the emptying order; the paper's is
    # Sort('VM_COUNT', 'DESC'), where ties keep the host order.
    desc_rank = np.empty(problem.n_hosts, dtype=np.int64)
    order = emptying_order(zoned, initial, how)
    desc_rank[np.lexsort((hosts, -initial)) if how == "paper" else order[::-1]] = hosts
    emptied: list[int] = []
    notes: list[str] = []
    size = problem.demand.max(axis=1) if problem.n_instances else np.zeros(0)

    def important_first(item: int) -> tuple[bool, float]:
        return (not bool(problem.important[item]), -float(size[item]))

    names = [h.name for h in problem.cluster.hosts]
    for e in order.tolist():
        if not problem.emptiable[e] or state.population[e] == 0:
            continue
        above = desc_rank < desc_rank[e]

        def pick(item: int, feasible: np.ndarray, above: np.ndarray = above) -> int:
            candidates = feasible & above
            if not candidates.any():
                return -1
            # The most populated receiver first; ties go to the higher-ranked host.
            key = np.where(candidates, state.population * (problem.n_hosts + 1) - desc_rank,
                           np.iinfo(np.int64).min)
            return state.choose(item, candidates, int(np.argmax(key)))

        if state.try_empty(e, pick, order=important_first):
            emptied.append(e)
        else:
            notes.append(f"{names[e]}: its instances do not all fit in the zones of the "
                         f"more populated hosts; left as it is")
    if columns is None:
        notes.append("zones: the cloud's own (PCPU and VCPU inventories; one zone where a "
                     "host has no PCPU); set [zones] for another split, e.g. default = paper")
    return state.packing(emptied, notes)
