"""hvp: METAHVP / METAHVPLIGHT of paper 002 and the search for the most hosts to empty."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consolidator.core.algorithms.base import Packing, Problem
from consolidator.core.algorithms.catalog import get_algorithm
from consolidator.core.algorithms.hvp import hvp, select_strategies
from consolidator.core.algorithms.hvp_pack import (
    Strategy,
    VPInstance,
    dimension_order,
    meta_hvp,
    permutation_keys,
    run_strategy,
    strategies,
)
from consolidator.core.algorithms.state import EPS
from consolidator.core.constraints import build_problem
from consolidator.scenario.files import parse_scenario

NONE = ("NONE", False)


def host(name: str, vcpus: int, memory_gb: int, zone: str = "nova") -> dict[str, Any]:
    """A scenario host with a large disk."""
    return {"name": name, "vcpus": vcpus, "memory_mb": memory_gb * 1024, "disk_gb": 1000,
            "availability_zone": zone}


def vm(name: str, on: str, vcpus: int, memory_gb: int, pinned: bool = False
       ) -> dict[str, Any]:
    """A scenario instance without disk."""
    doc: dict[str, Any] = {"name": name, "host": on, "vcpus": vcpus,
                           "memory_mb": memory_gb * 1024, "disk_gb": 0}
    if pinned:
        doc["metadata"] = {"consolidator:exclude": "true"}
    return doc


def problem_of(doc: dict[str, Any], **options: Any) -> Problem:
    """The Problem of a scenario document."""
    return build_problem(parse_scenario(doc).cluster, options=options)


def check(problem: Problem, packing: Packing) -> None:
    """Every contract of an hvp packing, checked independently of the algorithm."""
    target, placement = packing.target, problem.placement
    emptied = np.array(packing.emptied, dtype=np.int64)
    assert len(set(packing.emptied)) == len(emptied)
    used = np.zeros_like(problem.capacity)
    np.add.at(used, target, problem.demand)
    assert np.all(used <= problem.capacity + EPS)
    moved = target != placement
    assert not np.any(moved & ~problem.movable)
    assert np.all(np.isin(placement[moved], emptied))           # whole hosts only
    assert not np.any(np.isin(target, emptied))                 # emptied means empty
    assert np.all(problem.emptiable[emptied])
    assert np.all(problem.receivers[target[moved]])
    assert np.all(problem.host_zone[target] == problem.host_zone[placement])
    for members in problem.anti_affinity:
        hosts = target[members]
        assert len(set(hosts.tolist())) == len(hosts)


def test_registered_with_its_paper() -> None:
    """The CLI finds hvp by name."""
    algorithm = get_algorithm("hvp")
    assert algorithm.run is hvp and "002" in algorithm.paper


def test_paper_strategy_counts() -> None:
    """3.5.5: 253 heuristics in METAHVP; 5.1: 4 + 2 * 4 * 7 = 60 in METAHVPLIGHT."""
    assert len(strategies(light=False)) == 253
    assert len({s.name for s in strategies(light=False)}) == 253
    light = strategies(light=True)
    assert len(light) == 60
    assert sum(s.algo == "bf" for s in light) == 4
    assert {s.items for s in light} == {("MAX", True), ("SUM", True), ("MAXDIFFERENCE", True),
                                        ("MAXRATIO", True)}
    assert len({s.bins for s in light if s.algo == "pp"}) == 7
    assert [s.algo for s in select_strategies({"strategies": ["pp"]})] == ["pp"] * 121


def test_strategies_as_the_cli_gives_them() -> None:
    """-o strategies=ff,bf (one string, its names comma-separated, as the form says)."""
    chosen = select_strategies({"strategies": "ff, bf"})
    assert {s.algo for s in chosen} == {"ff", "bf"}
    assert chosen == select_strategies({"strategies": ["ff", "bf"]})


def test_four_hosts_exactly_two_emptied_with_fewest_migrations() -> None:
    """14 vCPUs on four 8-vCPU hosts: two hosts suffice, and two single moves do it."""
    doc = {"hosts": [host(f"h{n}", 8, 8) for n in range(4)],
           "instances": [vm("a", "h0", 4, 4), vm("b", "h1", 4, 4), vm("c1", "h2", 2, 2),
                         vm("c2", "h2", 2, 2), vm("d", "h3", 2, 2)]}
    for light in (True, False):
        problem = problem_of(doc, light=light)
        packing = hvp(problem)
        check(problem, packing)
        assert len(packing.emptied) == 2
        assert int(np.sum(packing.target != problem.placement)) == 2


def test_nothing_can_move() -> None:
    """Two hosts, each too full to take the other's instance: the placement stays."""
    doc = {"hosts": [host("h0", 8, 8), host("h1", 8, 8), host("h2", 8, 8)],
           "instances": [vm("a", "h0", 6, 2), vm("b", "h1", 6, 2),
                         vm("c", "h2", 2, 6), vm("p", "h2", 1, 1, pinned=True)]}
    problem = problem_of(doc, light=True)
    packing = hvp(problem)
    check(problem, packing)
    assert packing.emptied == ()
    assert np.array_equal(packing.target, problem.placement)


def first_fit_trap() -> VPInstance:
    """Bins (10, 2) and (2, 10); items s=(1, 2), p=(9, 1), q=(1, 8) in that natural order.

    First Fit puts s in the CPU-rich bin and spends its scarce memory, so p fits nowhere.
    Permutation Pack (3.5.2) gives the CPU-rich bin the CPU-heavy p first (p's ranking
    matches the bin's) and the memory-rich bin s and q.
    """
    return VPInstance(free=np.array([[10.0, 2.0], [2.0, 10.0]]),
                      demand=np.array([[1.0, 2.0], [9.0, 1.0], [1.0, 8.0]]),
                      scale=np.array([10.0, 10.0]))


def test_first_fit_fails_where_permutation_pack_succeeds() -> None:
    """The same natural item and bin order: First Fit fails, Permutation Pack packs."""
    assert run_strategy(first_fit_trap(), Strategy("ff", NONE, NONE)) is None
    target = run_strategy(first_fit_trap(), Strategy("pp", NONE, NONE))
    assert target is not None and target.tolist() == [1, 0, 1]
    found = meta_hvp(first_fit_trap(), strategies(light=False))
    assert found is not None


def test_first_fit_trap_as_a_cluster() -> None:
    """The trap on hosts: restricted to ff/NONE/NONE nothing is emptied; with pp, one host."""
    doc = {"hosts": [host("cpu", 11, 3), host("mem", 3, 11), host("big", 12, 12)],
           "instances": [vm("pin1", "cpu", 1, 1, pinned=True),
                         vm("pin2", "mem", 1, 1, pinned=True),
                         vm("s", "big", 1, 2), vm("p", "big", 9, 1), vm("q", "big", 1, 8)]}
    first_fit = problem_of(doc, strategies=["ff/NONE/NONE"])
    assert hvp(first_fit).emptied == ()
    for wanted in (["pp/NONE/NONE"], ["pp"]):
        problem = problem_of(doc, strategies=wanted)
        packing = hvp(problem)
        check(problem, packing)
        assert packing.emptied == (2,)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=2, max_value=6),
       st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=6))
def test_key_trick_equals_leinberger_lists(seed: int, dims: int, n_items: int,
                                           window: int) -> None:
    """3.5.2: sorting by the O(JD) key is the lexicographic walk of Leinberger's D! lists."""
    rng = np.random.default_rng(seed)
    window = min(window, dims)
    bin_vector = rng.random(dims)
    items = rng.random((n_items, dims))
    item_orders = dimension_order(items)
    keys = permutation_keys(bin_vector, item_orders, window)
    # Straightforward: the lists in the order the bin's ranking imposes, best match first.
    walk = list(itertools.permutations(dimension_order(bin_vector).tolist(), window))
    list_index = [walk.index(tuple(o[:window])) for o in item_orders.tolist()]
    by_key = sorted(range(n_items), key=lambda j: (tuple(keys[j]), j))
    by_list = sorted(range(n_items), key=lambda j: (list_index[j], j))
    assert by_key == by_list
    assert all(tuple(keys[j]) == tuple(range(window)) for j in range(n_items)
               if list_index[j] == 0)


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    """Random small clusters with zones, pinned instances, disabled hosts, groups."""
    n_hosts = draw(st.integers(min_value=2, max_value=7))
    zones = draw(st.integers(min_value=1, max_value=2))
    doc: dict[str, Any] = {"hosts": [], "instances": [], "server_groups": []}
    free = []
    for n in range(n_hosts):
        vcpus = draw(st.sampled_from([4, 8, 16]))
        memory = draw(st.sampled_from([8, 16, 32]))
        entry = host(f"h{n}", vcpus, memory, zone=f"z{n % zones}")
        if draw(st.integers(min_value=0, max_value=7)) == 0:
            entry["status"] = "disabled"
        doc["hosts"].append(entry)
        free.append([vcpus, memory])
    for k in range(draw(st.integers(min_value=0, max_value=4 * n_hosts))):
        n = draw(st.integers(min_value=0, max_value=n_hosts - 1))
        vcpus = draw(st.sampled_from([1, 2, 4]))
        memory = draw(st.sampled_from([1, 2, 4, 8]))
        if free[n][0] >= vcpus and free[n][1] >= memory:
            free[n][0] -= vcpus
            free[n][1] -= memory
            pinned = draw(st.integers(min_value=0, max_value=9)) == 0
            doc["instances"].append(vm(f"v{k}", f"h{n}", vcpus, memory, pinned))
    by_host: dict[str, list[str]] = {}
    for inst in doc["instances"]:
        by_host.setdefault(inst["host"], []).append(inst["name"])
    for g in range(draw(st.integers(min_value=0, max_value=2))):
        members = [names[0] for names in by_host.values()
                   if draw(st.booleans())]                     # one per host: valid start
        if len(members) > 1:
            policy = draw(st.sampled_from(["anti-affinity", "soft-anti-affinity"]))
            doc["server_groups"].append({"name": f"g{g}", "policy": policy,
                                         "members": members})
    return doc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from([{"light": True}, {"light": False},
                                    {"strategies": ["ff"]}, {"strategies": ["bf"]},
                                    {"strategies": ["pp"], "light": True}]))
def test_every_strategy_respects_the_constraints(doc: dict[str, Any],
                                                 options: dict[str, Any]) -> None:
    """Capacity, zones, anti-affinity, pinned instances, receivers: never violated."""
    problem = problem_of(doc, **options)
    packing = hvp(problem)
    check(problem, packing)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=30),
       st.integers(min_value=1, max_value=6))
def test_every_heuristic_packs_within_capacity(seed: int, n_items: int, n_bins: int) -> None:
    """Whatever each of the 253 heuristics returns fits its bins, with and without groups."""
    rng = np.random.default_rng(seed)
    demand = rng.integers(0, 4, size=(n_items, 3)).astype(float)
    groups = [(0,) if j % 3 == 0 else () for j in range(n_items)]
    inst = VPInstance(free=rng.integers(0, 12, size=(n_bins, 3)).astype(float), demand=demand,
                      scale=np.array([12.0, 12.0, 12.0]), groups=groups, blocked={0: {0}})
    for strategy in strategies(light=False):
        target = run_strategy(inst, strategy)
        if target is None:
            continue
        assert np.all(target >= 0)
        used = np.zeros_like(inst.free)
        np.add.at(used, target, demand)
        assert np.all(used <= inst.free + EPS), strategy.name
        grouped = target[[j for j in range(n_items) if groups[j]]]
        assert 0 not in grouped and len(set(grouped.tolist())) == len(grouped), strategy.name


class HighestRow:
    """A ranking that always picks the highest feasible host row."""

    name = "highest"

    def __init__(self) -> None:
        self.calls = 0

    def choose(self, state: Any, item: int, feasible: np.ndarray) -> int:
        """The last feasible row."""
        self.calls += 1
        return int(np.flatnonzero(feasible)[-1])


def test_targets_go_through_the_ranking() -> None:
    """With a ranking, every moved instance's target is the ranking's choice."""
    doc = {"hosts": [host(f"h{n}", 8, 8) for n in range(4)],
           "instances": [vm("a", "h0", 1, 1), vm("b", "h1", 4, 4), vm("c", "h2", 4, 4),
                         vm("d", "h3", 4, 4)]}
    ranking = HighestRow()
    problem = build_problem(parse_scenario(doc).cluster, options={"light": True},
                            ranking=ranking)
    packing = hvp(problem)
    check(problem, packing)
    assert packing.emptied == (0, 1)
    assert ranking.calls == 2 and packing.target[:2].tolist() == [3, 2]


def test_ranking_that_strands_an_instance_falls_back_to_the_packing() -> None:
    """The ranking sends x to h2, leaving y nowhere: the heuristic's own targets are used."""
    doc = {"hosts": [host("h0", 6, 8), host("h1", 8, 8), host("h2", 8, 8)],
           "instances": [vm("x", "h0", 2, 1), vm("y", "h0", 4, 1), vm("u", "h1", 6, 1),
                         vm("w", "h2", 4, 1)]}
    problem = build_problem(parse_scenario(doc).cluster, options={"light": True},
                            ranking=HighestRow())
    packing = hvp(problem)
    check(problem, packing)
    assert packing.emptied == (0,)
    assert packing.target[:2].tolist() == [1, 2]
    assert any("ranking" in note for note in packing.notes)


@pytest.mark.parametrize("light", [True, False])
def test_generated_cloud_is_near_the_volume_bound(light: bool) -> None:
    """On a synthetic 60-host cloud the hosts kept are within 5 % (or 1) of the bound."""
    from consolidator.emulators.fake.generate import generate
    problem = build_problem(parse_scenario(generate(60, per_host=10, fill=0.5)).cluster,
                            options={"light": light})
    packing = hvp(problem)
    check(problem, packing)
    total = problem.demand.sum(axis=0)
    bound = max(int(np.searchsorted(np.cumsum(np.sort(problem.capacity[:, r])[::-1]),
                                    total[r] - EPS)) + 1 for r in range(total.size))
    kept = problem.n_hosts - len(packing.emptied)
    assert kept <= max(bound * 1.05, bound + 1)
