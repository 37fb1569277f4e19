"""The energy objective on a cloud of two hardware generations: it empties the power-hungry
one and saves more idle watts than the default objective; every plan passes the checker."""

from __future__ import annotations

import pytest

from consolidator.core.checker import assert_plan_sound
from consolidator.core.energy_objective import efficiency_order, energy_plan
from consolidator.core.planner import plan_cluster
from tests.unit.builders import cluster, hosts, vm

OLD_WATTS, NEW_WATTS = 320.0, 140.0
OLD = [f"old-{i}" for i in range(6)]
NEW = [f"new-{i}" for i in range(6)]


def two_generations():
    """Six small old hosts half full of small VMs, six large new ones a quarter full of
    fewer, larger VMs (so the default empties the new ones first)."""
    host_list = (hosts(*[(n, 16, 65536) for n in OLD])
                 + hosts(*[(n, 32, 131072) for n in NEW]))
    vms = [vm(f"{h}-vm{j}", h, vcpus=2, memory_mb=8192) for h in OLD for j in range(4)]
    vms += [vm(f"{h}-vm{j}", h, vcpus=4, memory_mb=16384) for h in NEW for j in range(2)]
    return cluster(host_list, vms)


IDLE = {**{n: OLD_WATTS for n in OLD}, **{n: NEW_WATTS for n in NEW}}


def watts(draft) -> float:
    return sum(IDLE[h] for h in draft.power_off)


@pytest.mark.parametrize("algorithm", ["zoned-bestfit", "firstfit", "hvp", "importance-3d"])
def test_energy_objective_empties_the_hungry_generation(algorithm: str) -> None:
    c = two_generations()
    default = plan_cluster(c, algorithm)
    energy = energy_plan(c, algorithm, IDLE, fallback=270.0)
    for draft in (default, energy):
        assert_plan_sound(c, draft.migrations, draft.power_off)
    assert set(OLD) <= set(energy.power_off)
    assert watts(energy) >= watts(default)
    assert energy.objective == "energy"


def test_energy_objective_beats_the_default_where_the_default_keeps_old_hosts() -> None:
    """zoned-bestfit in the paper's order (fewest instances first) empties the new hosts;
    the energy objective empties the old ones."""
    c = two_generations()
    paper = {"order": "paper"}
    default = plan_cluster(c, "zoned-bestfit", options=paper)
    energy = energy_plan(c, "zoned-bestfit", IDLE, fallback=270.0, options=paper)
    assert set(default.power_off) & set(NEW)  # the paper's order empties new hosts
    assert watts(energy) > watts(default)


def test_efficiency_orders_by_idle_watts_per_capacity() -> None:
    from consolidator.core.constraints import Rules, build_problem

    problem = build_problem(two_generations(), Rules())
    order = efficiency_order(problem, IDLE, 270.0)
    names = [problem.cluster.hosts[h].name for h in order]
    assert names[:6] == NEW and sorted(names[6:]) == OLD


def test_missing_estimates_fall_back() -> None:
    c = two_generations()
    draft = energy_plan(c, "zoned-bestfit", {}, fallback=270.0)
    assert_plan_sound(c, draft.migrations, draft.power_off)
