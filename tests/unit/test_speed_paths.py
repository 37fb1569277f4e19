"""The speed-ups of hvp and the front give the same results as the plain computations."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from consolidator.core import planner
from consolidator.core.algorithms.catalog import get_algorithm
from consolidator.core.algorithms.hvp_pack import (
    VPInstance,
    _orders,
    item_fit,
    numpy_item_fit,
    strategies,
)
from consolidator.core.algorithms.repair import guided_whole_hosts
from consolidator.core.checker import MoveMemo, MoveSpec, check_plan
from consolidator.core.constraints import build_problem
from consolidator.core.front import FAST_OPTIONS, prefix_packings, spaced
from consolidator.core.planner import PlanSettings
from consolidator.emulators.fake.generate import generate
from consolidator.scenario.files import parse_scenario


def instance(seed: int, items: int, bins: int, tight: float) -> VPInstance:
    """Items of a few flavours (host order: classes interleaved) into bins whose free room
    adds up to `tight` times the items' demand per column."""
    rng = np.random.default_rng(seed)
    flavours = np.array([[1, 2048, 20], [2, 4096, 40], [4, 8192, 40], [8, 16384, 80],
                         [2, 8192, 20], [4, 4096, 10]], dtype=np.float64)
    demand = flavours[rng.integers(0, len(flavours), items)]
    weights = rng.uniform(0.7, 1.3, (bins, 3))
    free = weights / weights.sum(axis=0) * demand.sum(axis=0) * tight
    return VPInstance(free=free, demand=demand, scale=free.max(axis=0))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("tight", [0.98, 1.05, 1.5])
def test_first_and_best_fit_on_python_floats_place_every_item_as_numpy_does(
        seed: int, tight: float) -> None:
    """Every First Fit and Best Fit heuristic of METAHVP: the same bins, or the same failure,
    whether the run is short (host order) or long (sorted)."""
    inst = instance(seed, items=400, bins=60, tight=tight)
    outcomes = set()
    for strategy in strategies(light=False):
        if strategy.algo == "pp":
            continue
        item_order, bin_order = _orders(inst, strategy)
        fast, plain = item_fit(inst, item_order, bin_order), \
            numpy_item_fit(inst, item_order, bin_order)
        assert (fast is None) == (plain is None), strategy.name
        if fast is not None:
            assert np.array_equal(fast, plain), strategy.name
        outcomes.add(fast is None)
    if tight == 1.5:
        assert False in outcomes            # the comparison covers packings, not only failures


def mixed(hosts: int, seed: int):  # type: ignore[no-untyped-def]
    """A generated mixed-host cluster about 60 % full."""
    return parse_scenario(generate(hosts, per_host=9.2, seed=seed, fill=0.6)).cluster


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("algorithm", ["zoned-bestfit", "firstfit", "hvp"])
def test_prefixes_replayed_together_equal_each_replayed_alone(seed: int, algorithm: str) -> None:
    """The front's prefixes of a run, sharing one replay, are the replays of each prefix
    made from scratch (guided_whole_hosts), placement and hosts left whole alike."""
    cluster = mixed(60, seed)
    problem = build_problem(cluster, PlanSettings().rules,
                            options=dict(FAST_OPTIONS.get(algorithm, {})))
    packing = get_algorithm(algorithm).run(problem)
    counts = [c for c in spaced(len(packing.emptied), 12) if c < len(packing.emptied)]
    shared = prefix_packings(problem, packing, counts)
    for count in counts:
        target, failed = guided_whole_hosts(problem, packing.target,
                                            chosen=list(packing.emptied[:count]))
        assert np.array_equal(shared[count].target, target)
        assert shared[count].emptied == tuple(h for h in packing.emptied[:count]
                                              if h not in failed)


def test_a_shared_move_memo_finds_what_a_fresh_check_finds() -> None:
    """The front's checker memo (per move, one cluster and one Rules object): every plan,
    checked after others that shared its moves, gets the findings of a check without it,
    bad moves and bad waves included; a memo of other rules is not used."""
    cluster = mixed(12, 1)
    rules = PlanSettings().rules
    memo = MoveMemo(cluster, rules)
    by_host: dict[str, list[str]] = {}
    for inst in cluster.instances:
        by_host.setdefault(inst.host, []).append(inst.id)
    names = [h.name for h in cluster.hosts]
    a, b = names[0], names[1]
    first, second = by_host[a][0], by_host[b][0]
    plans = [
        [MoveSpec(first, a, b, 1)],
        [MoveSpec(first, a, b, 1), MoveSpec(second, b, a, 2)],
        [MoveSpec(first, b, a, 1)],                       # not its host
        [MoveSpec(first, a, b, 0)],                       # wave 0
        [MoveSpec(first, a, "nowhere", 1)],               # no such host
        [MoveSpec(first, a, b, 1)],
    ]
    for moves in plans:
        fresh = check_plan(cluster, moves, [], rules=rules)
        assert check_plan(cluster, moves, [], rules=rules, memo=memo) == fresh
    assert any("not positive" in p for p in check_plan(cluster, plans[3], [], rules=rules,
                                                         memo=memo))
    other = MoveMemo(cluster, replace(rules))
    other.found[(first, b, a)] = []                      # a wrong entry, never read
    assert check_plan(cluster, plans[2], [], rules=rules, memo=other) == \
        check_plan(cluster, plans[2], [], rules=rules)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_waves_are_the_same_with_the_room_shortcut(seed: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """plan_waves skips the room test of destinations that take every arrival with room to
    spare (planner.always_room), and when no move can wait gives each source's k-th move
    wave k // limit + 1 (_in_turn): the waves are those of the full test, on a whole plan
    (in turn) and on a plan whose destinations are sources too (the loop, partly roomy)."""
    cluster = mixed(80, seed)
    problem = build_problem(cluster, PlanSettings().rules)
    packing = get_algorithm("firstfit").run(problem)
    plans = [[(int(i), int(problem.placement[i]), int(packing.target[i]))
              for i in np.flatnonzero(packing.target != problem.placement)]]
    swap = [(int(i), int(problem.placement[i]), int(problem.placement[j]))
            for i, j in zip(range(0, 60, 2), range(1, 60, 2), strict=True)
            if problem.placement[i] != problem.placement[j]]
    plans.append(plans[0][: len(plans[0]) // 2] + swap)
    for moves in plans:
        assert planner.always_room(cluster, moves)      # the shortcut is taken
        fast = planner.plan_waves(cluster, moves, 2, leftover=[])
        with monkeypatch.context() as m:
            m.setattr(planner, "always_room", lambda _cluster, _moves: set())
            full = planner.plan_waves(cluster, moves, 2, leftover=[])
        assert fast == full


def test_no_room_shortcut_for_sources_nor_fractions() -> None:
    """A destination that is also a source, or a cluster with fractional demand, keeps the
    full room test."""
    cluster = mixed(12, 1)
    rows = {inst.host: n for n, inst in enumerate(cluster.instances)}
    names = [h.name for h in cluster.hosts]
    a, b, c = (cluster.host_index[n] for n in names[:3])
    moves = [(rows[names[0]], a, b), (rows[names[1]], b, c)]
    assert planner.always_room(cluster, moves) <= {c}
    assert b not in planner.always_room(cluster, moves)
    fractional = SimpleNamespace(demand=np.array([[0.5, 1.0], [1.0, 1.0]]),
                                 usage=np.zeros((2, 2)), capacity=np.full((2, 2), 100.0))
    assert planner.always_room(fractional, [(0, 0, 1)]) == set()       # type: ignore[arg-type]
    whole = SimpleNamespace(demand=np.array([[1.0, 1.0], [1.0, 1.0]]),
                            usage=np.zeros((2, 2)), capacity=np.full((2, 2), 100.0))
    assert planner.always_room(whole, [(0, 0, 1)]) == {1}               # type: ignore[arg-type]


def test_no_moves_no_waves() -> None:
    """An empty plan has no waves, in turn or not."""
    assert planner.plan_waves(mixed(12, 1), [], 2) == []


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("options", [{"strategies": ["ff", "bf", "pp"]},   # all 253
                                     {"strategies": ["ff", "bf"]}, {"light": True}])
def test_hvp_plans_are_unchanged_by_the_python_first_and_best_fit(
        seed: int, options: dict[str, object], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """hvp's packing on generated mixed clusters is the same whether First Fit and Best Fit
    run on Python floats (short runs, the default) or on NumPy throughout."""
    from consolidator.core.algorithms import hvp as hvp_module
    from consolidator.core.algorithms import hvp_pack

    cluster = mixed(150, seed)

    def packing():  # type: ignore[no-untyped-def]
        hvp_module._RECENT.clear()
        problem = build_problem(cluster, PlanSettings().rules, options=dict(options))
        return get_algorithm("hvp").run(problem)

    fast = packing()
    monkeypatch.setattr(hvp_pack, "FAST_RUNS", 10 ** 9)
    plain = packing()
    assert np.array_equal(fast.target, plain.target)
    assert fast.emptied == plain.emptied and fast.notes == plain.notes
