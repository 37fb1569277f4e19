"""-a exact (OR-Tools CP-SAT) and the budget-aware search measured against it.

CP-SAT is the yardstick: on small generated mixed clusters it proves the fewest hosts within
a budget, and ``plan --max-migrations M`` (-a auto) must keep at most one host more. Small
clusters and a time limit keep these tests within seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from consolidator.core.algorithms.budget_search import Limits
from consolidator.core.algorithms.exact import ExactResult, solve
from consolidator.core.constraints import Rules, build_problem
from consolidator.core.errors import UsageError
from consolidator.core.front import AUTO, Budget, FrontBuilder, plan_within
from consolidator.core.model import Host, Instance, ServerGroup
from consolidator.core.planner import PlanSettings, plan_cluster
from consolidator.emulators.fake.generate import generate
from consolidator.scenario.files import parse_scenario
from tests.unit.builders import cluster, hosts, vm
from tests.unit.test_front import mixed

#: Solvers and peers keep no N+1 host: neither do the plans compared with them.
NO_N_PLUS_ONE = PlanSettings(n_plus_one=False)
#: Seconds CP-SAT may take per solve here (each proves optimality in about a second).
TIME_LIMIT = 15.0


def test_exact_proves_the_optimum_and_says_so() -> None:
    """Three hosts of 8 vCPUs, 6+6+4 vCPUs: two hosts are needed (the volume is 16)."""
    c = cluster(hosts(("a", 8, 65536), ("b", 8, 65536), ("c", 8, 65536)),
                [vm("x", "a", 6), vm("y", "b", 6), vm("z1", "c", 2), vm("z2", "c", 2)])
    draft = plan_cluster(c, "exact", settings=NO_N_PLUS_ONE, options={"time_limit": 5})
    assert draft.hosts_after == 2 and draft.lower_bound == 2
    assert len(draft.migrations) == 2           # no 2-host plan moves fewer
    assert "exact (CP-SAT): 2 hosts in use, optimal" in draft.notes


def test_the_gap_in_words() -> None:
    target = np.zeros(1, dtype=np.int64)
    assert ExactResult(target, 58, 58, 58, True).describe() == "58 hosts in use, optimal"
    assert ExactResult(target, 61, 61, 58, False).describe() == \
        "61 hosts in use, at most 3 above the optimum"


def test_exact_honours_groups_pins_zones_and_traits() -> None:
    """Anti-affinity members stay apart, a pinned instance keeps its host in use, no move
    crosses a zone, and an instance that requires a trait lands only on a host that has it;
    the plan passes the checker (draft_from_packing asserts it)."""
    host_list = (*hosts(("a1", 16, 65536), ("a2", 16, 65536), ("a3", 16, 65536)),
                 Host(name="g1", vcpus=16, memory_mb=65536, disk_gb=10_000,
                      traits=("CUSTOM_FAST",)),
                 *hosts(("b1", 16, 65536), ("b2", 16, 65536), availability_zone="other"))
    vms = [vm("p", "a1", 2), vm("q", "a2", 2), vm("r", "a3", 2),
           Instance(name="pinned", host="a3", vcpus=1, memory_mb=1024, disk_gb=10,
                    status="SHUTOFF"),
           Instance(name="fast", host="a2", vcpus=2, memory_mb=1024, disk_gb=10,
                    flavor_extra_specs={"trait:CUSTOM_FAST": "required"}),
           vm("o1", "b1", 2), vm("o2", "b2", 2)]
    ids = {v.name: v.id for v in vms}
    group = ServerGroup(name="apart", policy="anti-affinity", members=(ids["p"], ids["q"]))
    c = cluster(host_list, vms, (group,))
    draft = plan_cluster(c, "exact", settings=NO_N_PLUS_ONE, options={"time_limit": 5})
    final = {v.name: v.host for v in vms} | {m.instance_name: m.destination
                                              for m in draft.migrations}
    assert final["p"] != final["q"]
    assert final["pinned"] == "a3" and final["fast"] in ("a2", "g1")
    assert {final["o1"], final["o2"]} <= {"b1", "b2"}
    # a3 (pinned) + one more for p/q apart + g1 or a2 for 'fast' ... and one host of zone b
    assert draft.hosts_after == 3
    assert "optimal" in draft.notes[-1]


def test_exact_keeps_a_moving_member_off_its_pinned_partners_host() -> None:
    """An anti-affinity group of one movable and one excluded (pinned) member: the movable
    one may not join the pinned one, so nothing moves (the property test's example)."""
    vms = [vm("v0", "h0"), vm("v1", "h1", metadata={"consolidator:exclude": "true"})]
    group = ServerGroup(name="aa", policy="anti-affinity", members=(vms[0].id, vms[1].id))
    c = cluster(hosts(("h0", 4, 8192), ("h1", 4, 8192)), vms, (group,))
    draft = plan_cluster(c, "exact", settings=NO_N_PLUS_ONE, options={"time_limit": 5})
    assert not draft.migrations
    assert draft.hosts_after == 2


def test_without_ortools_exact_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)
    c = cluster(hosts(("a", 8, 65536), ("b", 8, 65536)), [vm("x", "a"), vm("y", "b")])
    with pytest.raises(UsageError, match=r"pip install 'consolidator\[exact\]'"):
        plan_cluster(c, "exact", settings=NO_N_PLUS_ONE)


def test_exact_within_a_budget_keeps_it_and_is_no_worse_than_auto() -> None:
    c = mixed(30, 2)
    budget = Budget(max_migrations=60)
    auto = plan_within(FrontBuilder(c, NO_N_PLUS_ONE), AUTO, budget)
    exact = plan_within(FrontBuilder(c, NO_N_PLUS_ONE), "exact", budget)
    assert len(exact.migrations) <= 60
    assert exact.hosts_after <= auto.hosts_after
    assert exact.lower_bound <= exact.hosts_after


@pytest.mark.parametrize("hosts_count,seed", [(30, 1), (40, 2), (40, 3), (100, 2)])
def test_the_budget_is_used_within_one_host_of_cp_sat(hosts_count: int, seed: int) -> None:
    """At 10, 25, 50, 75 and 90 % of the unbudgeted migrations, plan --max-migrations M
    keeps at most one host more than CP-SAT's optimum (or its best, when unproven), in the
    looser model where a host that stays may also give instances away."""
    c = mixed(hosts_count, seed)
    unbudgeted = len(plan_within(FrontBuilder(c, NO_N_PLUS_ONE), AUTO, Budget()).migrations)
    problem = build_problem(c, Rules())
    for percent in (10, 25, 50, 75, 90):
        most = unbudgeted * percent // 100
        ours = plan_within(FrontBuilder(c, NO_N_PLUS_ONE), AUTO, Budget(max_migrations=most))
        assert len(ours.migrations) <= most
        best = solve(problem, Limits(max_migrations=most), None, TIME_LIMIT,
                     fewest_migrations=False, whole_hosts=False)
        assert best is not None
        assert ours.hosts_after <= best.hosts + 1, (percent, most, best)
        assert ours.lower_bound <= best.hosts       # our bound is a true lower bound


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_exact_with_a_tiny_time_limit_is_never_worse_than_hvp(seed: int) -> None:
    """Issue 34: with 0.1 s CP-SAT often finds nothing on 30 hosts (seed 2 gave 30 hosts
    and no move where -a hvp keeps 5); the hvp plan that seeds it is then the answer, and the
    note says which of the two was kept."""
    c = parse_scenario(generate(30, seed=seed)).cluster
    heuristic = plan_cluster(c, "hvp")
    draft = plan_cluster(c, "exact", options={"time_limit": 0.1})
    assert (draft.hosts_after, len(draft.migrations)) <= \
        (heuristic.hosts_after, len(heuristic.migrations))
    said = [n for n in draft.notes if n.startswith("exact")]
    assert len(said) == 1
    assert said[0].startswith(("exact (CP-SAT): ", "exact: hvp's METAHVP plan kept, "))
    assert said[0].startswith("exact (CP-SAT)") or "; CP-SAT found " in said[0]
