"""The budget-aware search: it spends the budget where it frees the most hosts, meets every
limit exactly, and trades emptying one large host for several small ones."""

from __future__ import annotations

import numpy as np

from consolidator.core.algorithms.bounds import budget_host_bound
from consolidator.core.algorithms.budget_search import Limits, budget_packing
from consolidator.core.constraints import Rules, build_problem
from consolidator.core.front import Budget, FrontBuilder, plan_within
from consolidator.core.planner import PlanSettings
from tests.unit.builders import cluster, hosts, vm
from tests.unit.test_front import mixed

NO_N_PLUS_ONE = PlanSettings(n_plus_one=False)


def test_small_hosts_are_emptied_into_a_large_one_within_the_budget() -> None:
    """One large host with 1 instance, four small ones with 2 each, and 8 migrations: the
    least populated host is the large one, but emptying it and then the small ones in that
    order frees two hosts at most; emptying the four small ones into it frees four."""
    c = cluster(hosts(("big", 32, 262144), ("s1", 8, 32768), ("s2", 8, 32768),
                      ("s3", 8, 32768), ("s4", 8, 32768)),
                [vm("b0", "big", 2)]
                + [vm(f"{h}-{k}", h, 2) for h in ("s1", "s2", "s3", "s4") for k in range(2)])
    problem = build_problem(c, Rules())
    packing = budget_packing(problem, Limits(max_migrations=8))
    assert packing is not None
    assert sorted(c.hosts[h].name for h in packing.emptied) == ["s1", "s2", "s3", "s4"]
    assert int(np.count_nonzero(packing.target != problem.placement)) == 8
    draft = plan_within(FrontBuilder(c, NO_N_PLUS_ONE), "auto", Budget(max_migrations=8))
    assert draft.hosts_after == 1


def test_every_limit_is_met_exactly_and_the_bound_holds() -> None:
    c = mixed(40, 3)
    for budget in (Budget(max_migrations=150), Budget(max_moved_gib=500.0),
                   Budget(max_migrations=150, max_moved_gib=400.0)):
        draft = plan_within(FrontBuilder(c, NO_N_PLUS_ONE), "auto", budget)
        assert budget.max_migrations is None or len(draft.migrations) <= budget.max_migrations
        gib = sum(c.instances[c.instance_index[m.instance_id]].memory_mb
                  for m in draft.migrations) / 1024
        assert budget.max_moved_gib is None or gib <= budget.max_moved_gib + 1e-6
        problem = build_problem(c, Rules())
        mib = None if budget.max_moved_gib is None else budget.max_moved_gib * 1024
        assert draft.lower_bound >= budget_host_bound(problem, budget.max_migrations, mib)
        assert draft.hosts_after >= draft.lower_bound


def test_a_target_is_reached_by_the_search_when_it_can() -> None:
    c = mixed(40, 3)
    problem = build_problem(c, Rules())
    packing = budget_packing(problem, Limits(target_hosts=20))
    assert packing is not None
    busy = np.count_nonzero(np.bincount(packing.target, minlength=problem.n_hosts))
    assert busy <= 20
