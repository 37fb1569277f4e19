"""Lower bounds: the fewest running hosts any plan needs, and the fewest migrations."""

from __future__ import annotations

import numpy as np

from consolidator.core.algorithms.base import Problem

#: The Placement columns of capacity and demand (vcpus, memory_mb, disk_gb).
PLACEMENT_COLUMNS = 3


def fewest_hosts_covering(capacity: np.ndarray, total: float) -> int:
    """The fewest hosts, taken largest first, whose capacities add up to total."""
    if total <= 0:
        return 0
    cumulative = np.cumsum(np.sort(capacity)[::-1])
    reached = np.nonzero(cumulative >= total - 1e-6)[0]
    return int(reached[0]) + 1 if reached.size else int(capacity.size) + 1


def host_lower_bound(problem: Problem) -> int:
    """The fewest powered hosts: the largest, over resources, of the fewest hosts that cover
    the total demand; raised by anti-affinity group sizes, hosts that cannot be emptied, and
    the spare hosts kept as padding; under the chance constraint, by the mean CPU usage
    over the hosts' cores. Never more than the powered hosts.

    Only Placement's resources count: an algorithm's own columns (CPU zones) are not a valid
    bound, since hosts that stay on keep whatever load they had beyond their zones.
    """
    powered = problem.powered
    capacity = problem.capacity[powered, :PLACEMENT_COLUMNS]
    total = problem.demand[:, :PLACEMENT_COLUMNS].sum(axis=0)
    by_resource = max([fewest_hosts_covering(capacity[:, r], float(total[r]))
                       for r in range(capacity.shape[1])] + [usage_hosts_bound(problem)])
    groups = max((len(g) for g in problem.anti_affinity), default=0)
    population = np.bincount(problem.placement, minlength=problem.n_hosts)
    fixed = int(np.count_nonzero(powered & ~problem.emptiable & (population > 0)))
    return min(max(by_resource, groups, fixed) + problem.spare, int(powered.sum()))


def migration_lower_bound(problem: Problem, freed: int) -> int:
    """The fewest migrations that free `freed` hosts: the smallest populations added up."""
    population = np.bincount(problem.placement, minlength=problem.n_hosts)
    candidates = np.sort(population[problem.emptiable & problem.powered])
    return int(candidates[:max(freed, 0)].sum())


def usage_hosts_bound(problem: Problem) -> int:
    """The fewest hosts whose cores cover the instances' mean CPU usage, under the chance
    constraint at a confidence of one half or more (no host then holds more mean usage than
    its cores); 0 otherwise."""
    if problem.confidence is None or problem.cpu_limit is None or problem.usage_mean is None \
            or problem.confidence < 0.5:
        return 0
    return fewest_hosts_covering(problem.cpu_limit[problem.powered],
                                 float(problem.usage_mean.sum()))


def budget_host_bound(problem: Problem, max_migrations: int | None,
                      max_moved_mib: float | None) -> int:
    """The fewest hosts left on within a budget: no plan empties more hosts than the most
    that the budget pays for, each host costing at least its own instances (and their
    memory), the cheapest first. Not below host_lower_bound."""
    population = np.bincount(problem.placement, minlength=problem.n_hosts)
    mib = problem.demand[:, 1] if problem.demand.shape[1] > 1 else np.zeros(problem.n_instances)
    memory = np.bincount(problem.placement, weights=mib, minlength=problem.n_hosts) \
        if problem.n_instances else np.zeros(problem.n_hosts)
    pool = problem.powered & problem.emptiable
    most = int(pool.sum())
    for limit, cost in ((max_migrations, population), (max_moved_mib, memory)):
        if limit is not None:
            most = min(most, int(np.searchsorted(np.cumsum(np.sort(cost[pool])), limit + 1e-6,
                                                 side="right")))
    return max(host_lower_bound(problem), int(problem.powered.sum()) - most)
