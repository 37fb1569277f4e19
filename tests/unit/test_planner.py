"""The planner: collapse, waves, spares, bounds, constraints, and the independent checker."""

from __future__ import annotations

import numpy as np
import pytest

from consolidator.core.algorithms.bounds import host_lower_bound, migration_lower_bound
from consolidator.core.algorithms.state import PackingState
from consolidator.core.checker import MoveSpec, PlanCheckError, assert_plan_sound, check_plan
from consolidator.core.constraints import Rules, build_problem
from consolidator.core.model import ServerGroup
from consolidator.core.planner import (
    PlanError,
    PlanSettings,
    draft_from_packing,
    plan_cluster,
    plan_waves,
)
from tests.unit.builders import cluster, hosts, vm


def three_hosts() -> object:
    return cluster(hosts(("a", 8, 8192), ("b", 8, 8192), ("c", 8, 8192)),
                   [vm("x", "a", 2), vm("y", "b", 2), vm("z", "c", 2)])


def test_chains_collapse_and_round_trips_vanish() -> None:
    c = three_hosts()
    problem = build_problem(c)
    state = PackingState(problem)
    x, y = c.instance_index[c.instances[0].id], c.instance_index[c.instances[1].id]
    state.move(x, 1)   # a -> b
    state.move(x, 2)   # b -> c : collapses to a -> c
    state.move(y, 0)   # b -> a
    state.move(y, 1)   # a -> b : back home, no move at all
    draft = draft_from_packing(problem, state.packing([0]), algorithm="test", ranking=None,
                               settings=PlanSettings())
    assert [(m.instance_name, m.source, m.destination) for m in draft.migrations] == [
        ("x", "a", "c")]
    assert draft.power_off == ("a",)


def test_waves_respect_the_per_host_limit() -> None:
    c = cluster(hosts(("a", 64, 65536), ("b", 64, 65536)),
                [vm(f"v{i}", "b") for i in range(7)])
    draft = plan_cluster(c, "firstfit", settings=PlanSettings(per_host_limit=3,
                                                              n_plus_one=False))
    waves = [m.wave for m in draft.migrations]
    assert sorted(waves) == [1, 1, 1, 2, 2, 2, 3]


def test_waves_wait_for_room_and_for_anti_affinity() -> None:
    # b must first send y to c before x (from a) can land on b: capacity 4 vCPUs.
    c = cluster(hosts(("a", 4, 8192), ("b", 4, 8192), ("c", 4, 8192)),
                [vm("x", "a", 4), vm("y", "b", 4)])
    waves = plan_waves(c, [(0, 0, 1), (1, 1, 2)], per_host_limit=2)
    assert sorted((i, w) for i, _, _, w in waves) == [(0, 2), (1, 1)]
    swap = plan_waves(c, [(0, 0, 2)], per_host_limit=2)
    assert swap == [(0, 0, 2, 1)]
    g = ServerGroup("g", "anti-affinity", (c.instances[0].id, c.instances[1].id))
    grouped = cluster(c.hosts, list(c.instances), (g,))
    order = plan_waves(grouped, [(0, 0, 1), (1, 1, 2)], per_host_limit=2)
    assert sorted((i, w) for i, _, _, w in order) == [(0, 2), (1, 1)]


def test_a_cycle_without_room_is_refused() -> None:
    c = cluster(hosts(("a", 4, 8192), ("b", 4, 8192)), [vm("x", "a", 4), vm("y", "b", 4)])
    with pytest.raises(PlanError, match="no safe order"):
        plan_waves(c, [(0, 0, 1), (1, 1, 0)], per_host_limit=2)


def test_spares_prefer_hosts_already_empty_then_the_most_capable() -> None:
    c = cluster(hosts(("a", 32, 65536), ("b", 8, 8192), ("c", 16, 16384), ("d", 8, 8192)),
                [vm("x", "b"), vm("y", "c")])
    draft = plan_cluster(c, "firstfit", spare=2)
    assert draft.spare_hosts == ("d",) or "d" in draft.spare_hosts
    assert len(draft.spare_hosts) == 2
    assert not set(draft.spare_hosts) & set(draft.power_off)
    assert draft.hosts_after == draft.hosts_before - len(draft.power_off)


def test_bounds() -> None:
    c = cluster(hosts(("a", 8, 8192), ("b", 8, 8192), ("c", 4, 8192), ("d", 4, 8192)),
                [vm("x", "a", 6), vm("y", "b", 6), vm("z", "c", 1), vm("w", "c", 1),
                 vm("v", "d", 1)])
    problem = build_problem(c)
    # 15 vCPUs: the two 8-vCPU hosts give 16, so two hosts at least.
    assert host_lower_bound(problem) == 2
    assert migration_lower_bound(problem, 2) == 2   # d (1) and one of a/b (1 each)
    pinned = build_problem(c, Rules(excluded_hosts=("c", "d")))
    assert host_lower_bound(pinned) == 2
    g = ServerGroup("g", "anti-affinity", tuple(i.id for i in c.instances[:3]))
    assert host_lower_bound(build_problem(cluster(c.hosts, list(c.instances), (g,)))) == 3


def test_constraints_pin_hosts_and_instances() -> None:
    c = cluster(hosts(("a", 8, 8192), ("b", 8, 8192), ("c", 8, 8192), ("d", 8, 8192)),
                [vm("keep", "a", metadata={"consolidator:exclude": "true"}),
                 vm("off", "b", status="SHUTOFF"), vm("free", "c"), vm("e", "d")])
    draft = plan_cluster(c, "firstfit", settings=PlanSettings(rules=Rules(excluded_hosts=("d",))))
    assert [m.instance_name for m in draft.migrations] == ["free"]
    assert draft.power_off == ("c",)
    assert any("keep" in n for n in draft.notes) and any("off" in n for n in draft.notes)


def test_no_move_across_availability_zones() -> None:
    hs = hosts(("a", 8, 8192), ("b", 8, 8192))
    other = hosts(("c", 8, 8192), availability_zone="az2")
    c = cluster(hs + other, [vm("x", "a"), vm("y", "c")])
    draft = plan_cluster(c, "firstfit")
    assert all(m.instance_name != "y" for m in draft.migrations)


def test_checker_catches_each_violation() -> None:
    c = cluster(hosts(("a", 4, 8192), ("b", 4, 8192), ("c", 4, 8192)),
                [vm("x", "a", 3), vm("y", "b", 3), vm("s", "c", 1, status="SHUTOFF")])
    x, y, s = (i.id for i in c.instances)
    cases = {
        "over capacity": [MoveSpec(x, "a", "b", 1)],
        "moved 2 times": [MoveSpec(x, "a", "c", 1), MoveSpec(x, "c", "b", 2)],
        "is not its host": [MoveSpec(x, "b", "c", 1)],
        "may not move": [MoveSpec(s, "c", "a", 1)],
        "still holds": [],
    }
    for needle, moves in cases.items():
        off = ["c"] if needle == "still holds" else []
        problems = check_plan(c, moves, off)
        assert any(needle in p for p in problems), (needle, problems)
    assert check_plan(c, [MoveSpec(x, "a", "c", 1)], ["a"]) == []
    g = ServerGroup("g", "anti-affinity", (x, y))
    grouped = cluster(c.hosts, list(c.instances), (g,))
    assert not any("anti-affinity" in p for p in check_plan(
        grouped, [MoveSpec(x, "a", "b", 2), MoveSpec(y, "b", "c", 1)], [],
        per_host_limit=2))
    assert any("anti-affinity" in p for p in check_plan(
        grouped, [MoveSpec(x, "a", "b", 1), MoveSpec(y, "b", "c", 1)], []))
    with pytest.raises(PlanCheckError, match="over capacity"):
        assert_plan_sound(c, cases["over capacity"], [])


def test_a_host_over_capacity_before_the_plan_is_not_blamed() -> None:
    c = cluster(hosts(("a", 2, 8192), ("b", 8, 8192)), [vm("x", "a", 3), vm("y", "b", 1)])
    assert check_plan(c, [MoveSpec(c.instances[1].id, "b", "a", 1)], []) != []
    assert check_plan(c, [], []) == []


def test_the_last_host_of_a_zone_stays_powered() -> None:
    c = cluster(hosts(("a", 8, 8192), ("b", 16, 8192)) + hosts(("c", 8, 8192),
                                                               availability_zone="az2"),
                [vm("x", "c")])
    draft = plan_cluster(c, "zoned-bestfit")
    assert draft.migrations == ()
    assert draft.power_off == ("a",)
    assert "b" in draft.spare_hosts
    assert any("last usable host" in n for n in draft.notes)
    assert np.isscalar(draft.lower_bound)


def test_rollback_partial_moves_back_what_fits() -> None:
    """x and z lived on a; y, created since, has taken half of a, so only one of them fits
    back: without --partial the rollback is refused, with it the other one is reported."""
    from consolidator.core.rollback_plan import rollback_draft

    hs = hosts(("a", 4, 4096), ("b", 8, 8192))
    target = cluster(hs, [vm("x", "a", 2), vm("z", "a", 2)])
    live = cluster(hs, [vm("x", "b", 2), vm("z", "b", 2), vm("y", "a", 2)])
    with pytest.raises(PlanError):
        rollback_draft(target, live)
    draft = rollback_draft(target, live, partial=True)
    assert len(draft.migrations) == 1 and draft.migrations[0].destination == "a"
    assert any("partial: 1 instance does not fit back" in n for n in draft.notes)
