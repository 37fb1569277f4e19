"""importance-3d (paper 004, algorithm III): MPV heuristics, bin assignment, hard rules."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consolidator.core.algorithms.base import Packing, Problem
from consolidator.core.algorithms.catalog import get_algorithm
from consolidator.core.algorithms.importance3d import importance3d
from consolidator.core.algorithms.mpv3d import Bin, Boxes, Pool, h1, h2
from consolidator.core.constraints import Rules, build_problem
from consolidator.core.errors import UsageError
from consolidator.core.model import Cluster, Host, Instance, ServerGroup
from consolidator.scenario.files import load_cluster

BUNDLED = Path(__file__).resolve().parents[2] / "etc" / "consolidator" / "scenarios" / \
    "alto-cloud.yaml"
PAPER = (8, 8, 6)
BIG = np.array([1e9, 1e9])


def boxes(dims: list[tuple[int, int, int]], demand: np.ndarray | None = None,
          groups: list[frozenset[int]] | None = None) -> Boxes:
    n = len(dims)
    return Boxes(dims=np.array(dims, dtype=np.int64).reshape(n, 3),
                 demand=np.zeros((n, 2)) if demand is None else demand,
                 groups=groups or [frozenset()] * n, rank=np.zeros(n, dtype=np.int64),
                 size=np.zeros(n))


def pack(heuristic: object, b: Boxes, capacity: np.ndarray = BIG, max_bins: int = 99
         ) -> tuple[list[Bin], Pool]:
    pool = Pool(b, range(len(b.dims)))
    return heuristic(pool, PAPER, capacity, max_bins), pool  # type: ignore[operator]


# -- the pure heuristics: the paper's example ------------------------------------------------

@pytest.mark.parametrize("heuristic", [h1, h2])
@pytest.mark.parametrize(("box", "per_bin"), [((2, 4, 2), 24), ((2, 4, 1), 48)])
def test_paper_example_fills_one_bin_exactly(heuristic: object, box: tuple[int, int, int],
                                             per_bin: int) -> None:
    bins, pool = pack(heuristic, boxes([box] * per_bin))
    assert [len(b.items) for b in bins] == [per_bin] and not pool
    bins, pool = pack(heuristic, boxes([box] * (per_bin + 1)))
    assert sorted(len(b.items) for b in bins) == [1, per_bin] and not pool


@pytest.mark.parametrize("heuristic", [h1, h2])
def test_capacity_binds_before_geometry(heuristic: object) -> None:
    demand = np.tile([2.0, 4.0], (24, 1))
    bins, _ = pack(heuristic, boxes([(2, 4, 2)] * 24, demand), capacity=np.array([20.0, 1e9]))
    assert all(b.free[0] >= 0 for b in bins) and max(len(b.items) for b in bins) <= 10
    assert sum(len(b.items) for b in bins) == 24


@pytest.mark.parametrize("heuristic", [h1, h2])
def test_conflicting_boxes_never_share_a_bin(heuristic: object) -> None:
    group = frozenset({0})
    bins, _ = pack(heuristic, boxes([(1, 1, 1)] * 4, groups=[group, group, group, frozenset()]))
    assert len(bins) == 3
    assert all(sum(1 for i in b.items if i < 3) == 1 for b in bins)


@pytest.mark.parametrize("heuristic", [h1, h2])
def test_max_bins_leaves_the_rest_in_the_pool(heuristic: object) -> None:
    bins, pool = pack(heuristic, boxes([(8, 8, 6)] * 3), max_bins=2)
    assert len(bins) == 2 and len(pool.remaining()) == 1


def test_h2_mixes_depths_to_fill_the_bin() -> None:
    bins, _ = pack(h2, boxes([(8, 8, 4), (8, 8, 4), (8, 8, 2), (8, 8, 2)]))
    assert sorted(len(b.items) for b in bins) == [2, 2]
    assert all(b.volume == 8 * 8 * 6 for b in bins)


# -- the algorithm on hand-made clusters ------------------------------------------------------

def host(name: str, zone: str = "nova", **kw: object) -> Host:
    base: dict[str, object] = {"vcpus": 16, "memory_mb": 32768, "disk_gb": 1000}
    base.update(kw)
    return Host(name=name, availability_zone=zone, **base)  # type: ignore[arg-type]


def vm(name: str, on: str, vcpus: int = 2, mem: int = 2048, **kw: object) -> Instance:
    return Instance(name=name, host=on, vcpus=vcpus, memory_mb=mem, disk_gb=10,
                    **kw)  # type: ignore[arg-type]


def run(cluster: Cluster, rules: Rules | None = None, **options: object) -> tuple[Problem,
                                                                                  Packing]:
    problem = build_problem(cluster, rules or Rules(), options=options)
    return problem, importance3d(problem)


def moves(problem: Problem, packing: Packing) -> int:
    return int(np.count_nonzero(packing.target != problem.placement))


def hosts_used(packing: Packing) -> int:
    return int(np.count_nonzero(np.bincount(packing.target)))


def test_registered_under_its_cli_name() -> None:
    assert get_algorithm("importance-3d").run is importance3d


def test_assignment_keeps_the_fullest_host_and_pack_from_scratch_does_not() -> None:
    hosts = [host("a"), host("b"), host("c"), host("d")]
    instances = [vm("a1", "a"), vm("b1", "b"), vm("b2", "b"), vm("b3", "b"),
                 vm("c1", "c"), vm("c2", "c")]
    cluster = Cluster(hosts, instances)
    problem, packing = run(cluster)
    assert hosts_used(packing) == 1 and set(packing.target.tolist()) == {1}
    assert moves(problem, packing) == 3 and packing.emptied == (0, 2)
    problem, paper = run(cluster, assign=False)
    assert hosts_used(paper) == 1 and set(paper.target.tolist()) == {0}
    assert moves(problem, paper) == 5


def test_importance_decides_what_fits_the_geometry() -> None:
    # 8 physical cores and 8 GiB overbooked 16:1: a unit is a core and a GiB. A 2 x 2 x 2
    # important box fits 48 times in 8 x 8 x 6 (Placement would allow 64); 2 x 2 x 1 fits 96.
    big = {"vcpus": 8, "memory_mb": 8192, "cpu_allocation_ratio": 16.0,
           "ram_allocation_ratio": 16.0}
    hosts = [host("a", **big), host("b", **big)]

    def cluster(important: bool) -> Cluster:
        meta = {} if important else {"consolidator:important": "false"}
        return Cluster(hosts, [vm(f"v{k}", "ab"[k % 2], metadata=meta) for k in range(60)])

    _, packed = run(cluster(important=False))
    assert hosts_used(packed) == 1
    problem, kept = run(cluster(important=True))
    assert hosts_used(kept) == 2 and moves(problem, kept) == 0
    assert any("frees no host" in n for n in kept.notes)


def test_pinned_instances_stay_and_their_host_stays_on() -> None:
    hosts = [host("a"), host("b"), host("c")]
    instances = [vm("a1", "a", metadata={"consolidator:exclude": "true"}), vm("b1", "b"),
                 vm("b2", "b"), vm("c1", "c")]
    problem, packing = run(Cluster(hosts, instances))
    assert packing.target[0] == 0 and hosts_used(packing) == 1
    assert set(packing.target.tolist()) == {0} and packing.emptied == (1, 2)


def test_disabled_host_receives_nothing_and_zones_are_kept() -> None:
    hosts = [host("a", zone="z1", vcpus=64, memory_mb=131072), host("b", zone="z1"),
             host("c", zone="z2"), host("d", zone="z2", status="disabled")]
    instances = [vm("a1", "a"), vm("b1", "b"), vm("c1", "c"), vm("d1", "d")]
    problem, packing = run(Cluster(hosts, instances))
    assert packing.target.tolist() == [0, 0, 2, 3]
    assert packing.emptied == (1,)


def test_anti_affinity_members_never_share_a_host() -> None:
    hosts = [host(n) for n in "abcd"]
    instances = [vm(f"w{k}", "abcd"[k]) for k in range(4)] + [vm("x", "a"), vm("y", "b")]
    group = ServerGroup("web", "anti-affinity", members=tuple(i.id for i in instances[:3]))
    problem, packing = run(Cluster(hosts, instances, [group]))
    assert len(set(packing.target[:3].tolist())) == 3
    assert hosts_used(packing) == 3


def test_bad_options_are_usage_errors() -> None:
    cluster = Cluster([host("a")], [vm("a1", "a")])
    with pytest.raises(UsageError, match="bin"):
        run(cluster, bin=(8, 8))
    with pytest.raises(UsageError, match="heuristic"):
        run(cluster, heuristic="h3")


# -- the acceptance test ---------------------------------------------------------------

def test_bundled_scenario_assignment_moves_fewer_than_pack_from_scratch() -> None:
    cluster = load_cluster(BUNDLED)
    problem = build_problem(cluster, Rules())
    before = int(np.count_nonzero(np.bincount(problem.placement)))
    assigned = importance3d(problem)
    scratch = importance3d(replace(problem, options={"assign": False}))
    for packing in (assigned, scratch):
        check(problem, packing)
        assert hosts_used(packing) <= before
    assert hosts_used(assigned) < before
    assert moves(problem, assigned) < moves(problem, scratch)


# -- every result respects the hard rules -------------------------------------------------------

def check(problem: Problem, packing: Packing) -> None:
    """Capacity, zones, pinned instances, receivers, anti-affinity, emptied, host count."""
    target, placement = packing.target, problem.placement
    used = np.zeros_like(problem.capacity)
    np.add.at(used, target, problem.demand)
    before = np.zeros_like(problem.capacity)
    np.add.at(before, placement, problem.demand)
    over = used > problem.capacity + 1e-6
    assert not (over & (used > before + 1e-6)).any(), "a host went over capacity"
    assert (problem.host_zone[target] == problem.host_zone[placement]).all()
    assert (target[~problem.movable] == placement[~problem.movable]).all()
    moved = target != placement
    assert problem.receivers[target[moved]].all()
    for rows in problem.anti_affinity:
        assert len(set(target[rows].tolist())) == len(rows)
    pop_before = np.bincount(placement, minlength=problem.n_hosts)
    pop_after = np.bincount(target, minlength=problem.n_hosts)
    assert set(packing.emptied) == set(np.flatnonzero((pop_before > 0) & (pop_after == 0)))
    assert np.count_nonzero(pop_after) <= np.count_nonzero(pop_before)
    if moved.any():
        assert packing.emptied, "migrations that free no host"


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    n_hosts = draw(st.integers(2, 6))
    hosts = []
    room = []
    for k in range(n_hosts):
        vcpus = draw(st.sampled_from([4, 8, 16]))
        mem = draw(st.sampled_from([8192, 16384, 32768]))
        hosts.append(Host(name=f"h{k}", vcpus=vcpus, memory_mb=mem, disk_gb=200,
                          cpu_allocation_ratio=draw(st.sampled_from([1.0, 4.0])),
                          availability_zone=draw(st.sampled_from(["z1", "z2"])),
                          status=draw(st.sampled_from(["enabled"] * 4 + ["disabled"]))))
        room.append(list(hosts[-1].capacity))
    instances = []
    for k in range(draw(st.integers(0, 14))):
        vcpus, mem, disk = draw(st.sampled_from([(1, 1024, 10), (2, 4096, 20), (4, 8192, 40)]))
        h = draw(st.integers(0, n_hosts - 1))
        if room[h][0] < vcpus or room[h][1] < mem or room[h][2] < disk:
            continue
        room[h] = [room[h][0] - vcpus, room[h][1] - mem, room[h][2] - disk]
        meta = {}
        if draw(st.booleans()):
            meta["consolidator:important"] = "false"
        if draw(st.integers(0, 9)) == 0:
            meta["consolidator:exclude"] = "true"
        instances.append(Instance(name=f"v{k}", host=f"h{h}", vcpus=vcpus, memory_mb=mem,
                                  disk_gb=disk, metadata=meta))
    groups = []
    one_per_host = list({i.host: i.id for i in instances}.values())
    if len(one_per_host) >= 2:          # Nova never lets members start on one host
        members = draw(st.lists(st.sampled_from(one_per_host), min_size=2, max_size=3,
                                unique=True))
        groups.append(ServerGroup("g", "anti-affinity", members=tuple(members)))
    return Cluster(hosts, instances, groups)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), assign=st.booleans(), grid=st.sampled_from([PAPER, (16, 16, 6)]),
       heuristic=st.sampled_from(["best", "h1", "h2"]))
def test_random_clusters_respect_the_hard_rules(cluster: Cluster, assign: bool,
                                                grid: tuple[int, int, int],
                                                heuristic: str) -> None:
    problem = build_problem(cluster, Rules(), options={"assign": assign, "bin": grid,
                                                       "heuristic": heuristic})
    check(problem, importance3d(problem))
