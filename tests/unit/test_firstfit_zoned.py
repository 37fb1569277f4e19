"""Algorithms I and II of paper 004 on small clusters with known answers."""

from __future__ import annotations

import numpy as np

from consolidator.core.constraints import Rules, build_problem
from consolidator.core.model import Instance
from consolidator.core.planner import PlanSettings, plan_cluster
from tests.unit.builders import cluster, hosts, vm

#: The paper's algorithms on their own: no host kept for N+1.
NO_N_PLUS_ONE = PlanSettings(n_plus_one=False)


def test_firstfit_empties_from_the_end_into_the_first_host() -> None:
    c = cluster(hosts(("c1", 8, 8192), ("c2", 8, 8192), ("c3", 8, 8192)),
                [vm("a", "c1", 2), vm("b", "c2", 2), vm("c", "c3", 2)])
    plan = plan_cluster(c, "firstfit", settings=NO_N_PLUS_ONE)
    assert [(m.instance_name, m.source, m.destination) for m in plan.migrations] == [
        ("b", "c2", "c1"), ("c", "c3", "c1")]
    assert plan.power_off == ("c2", "c3")
    assert (plan.hosts_before, plan.hosts_after, plan.lower_bound) == (3, 1, 1)


def test_firstfit_leaves_a_host_whole_when_one_instance_does_not_fit() -> None:
    # c3's two instances need 6 vCPUs; c1 has 4 free and c2 has 1: c3 stays as it is.
    c = cluster(hosts(("c1", 8, 65536), ("c2", 8, 65536), ("c3", 8, 65536)),
                [vm("a", "c1", 4), vm("b", "c2", 7), vm("x", "c3", 3), vm("y", "c3", 3)])
    plan = plan_cluster(c, "firstfit")
    assert all(m.source != "c3" for m in plan.migrations)
    assert "c3" not in plan.power_off
    assert any("c3" in n for n in plan.notes)


def test_firstfit_fills_the_large_hosts_of_a_mixed_cloud_first() -> None:
    """The cloud lists its two small hosts first. In that order first fit tries to empty the
    large host c3 into them and nothing moves; largest first (the default) empties the small
    hosts into c3, which then holds everything alone."""
    c = cluster(hosts(("s1", 4, 8192), ("s2", 4, 8192), ("c3", 16, 32768)),
                [vm("a", "s1", 3), vm("b", "s2", 3), vm("c", "c3", 3)])
    as_given = plan_cluster(c, "firstfit", options={"order": "given"}, settings=NO_N_PLUS_ONE)
    by_size = plan_cluster(c, "firstfit", settings=NO_N_PLUS_ONE)
    assert as_given.hosts_after == 3 and not as_given.migrations
    assert set(by_size.power_off) == {"s1", "s2"} and by_size.hosts_after == 1
    assert {m.destination for m in by_size.migrations} == {"c3"}


def test_zoned_bestfit_empties_least_populated_into_most_populated() -> None:
    # c2 holds 1 instance, c1 holds 3, c3 holds 2: c2 empties first, into c1 (most populated).
    c = cluster(hosts(("c1", 64, 262144), ("c2", 64, 262144), ("c3", 64, 262144)),
                [vm("a1", "c1"), vm("a2", "c1"), vm("a3", "c1"), vm("b1", "c2"),
                 vm("c1x", "c3"), vm("c2x", "c3")])
    plan = plan_cluster(c, "zoned-bestfit", settings=NO_N_PLUS_ONE)
    moves = {m.instance_name: m.destination for m in plan.migrations}
    assert moves == {"b1": "c1", "c1x": "c1", "c2x": "c1"}
    assert plan.power_off == ("c2", "c3")


def test_n_plus_one_keeps_a_host_to_absorb_the_largest_failure() -> None:
    """Everything fits on c1, but then nothing could take c1's load if it failed: with N+1
    (the default) one more host stays on and the plan says why."""
    c = cluster(hosts(("c1", 8, 8192), ("c2", 8, 8192), ("c3", 8, 8192)),
                [vm("a", "c1", 2), vm("b", "c2", 2), vm("c", "c3", 2)])
    plan = plan_cluster(c, "firstfit")
    assert len(plan.power_off) == 1 and plan.hosts_after == 2
    assert any(n.startswith("N+1: ") for n in plan.notes)


def test_zones_separate_important_from_unimportant() -> None:
    # HQ zone: 4 CPUs at 1:1 per host; LQ: 4 at 1:1. Two important 2-vCPU instances fill c1's
    # HQ zone, so a third important one cannot join, while an unimportant one can.
    zones = np.array([[4, 1.0, 4, 1.0]] * 3)
    low = {"consolidator:important": "false"}
    c = cluster(hosts(("c1", 8, 65536), ("c2", 8, 65536), ("c3", 8, 65536)),
                [vm("i1", "c1", 2), vm("i2", "c1", 2), vm("u1", "c1", 2, metadata=low),
                 vm("i3", "c2", 2), vm("u2", "c3", 2, metadata=low)])
    plan = plan_cluster(c, "zoned-bestfit", options={"zones": zones, "order": "paper"},
                        settings=NO_N_PLUS_ONE)
    moves = {m.instance_name: m.destination for m in plan.migrations}
    assert "i3" not in moves or moves["i3"] != "c1"
    assert moves.get("u2") == "c1"


def test_importance_sources() -> None:
    rules = Rules(unimportant=frozenset({"listed"}))
    c = cluster(hosts(("c1", 8, 8192)),
                [vm("plain", "c1"), vm("listed", "c1"),
                 vm("meta", "c1", metadata={"consolidator:important": "no"}),
                 Instance(name="spec", host="c1", vcpus=1, memory_mb=1, disk_gb=1,
                          flavor_extra_specs={"consolidator:important": "false"})])
    assert build_problem(c, rules).important.tolist() == [True, False, False, False]
