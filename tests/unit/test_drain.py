"""drain: repacking the moving instances to empty one more host than the heuristics did."""

from __future__ import annotations

import numpy as np

from consolidator.core.algorithms.bounds import host_lower_bound
from consolidator.core.algorithms.drain import fill
from consolidator.core.algorithms.hvp import hvp
from consolidator.core.constraints import build_problem
from consolidator.core.planner import PlanSettings, draft_from_packing
from consolidator.emulators.fake.generate import generate
from consolidator.scenario.files import parse_scenario
from tests.unit.test_hvp import check

#: The four host models of issue 16's mixed clusters (tools/bench/heldout.py).
FOUR_SIZES = [(16, 65536, 500, 4.0), (32, 131072, 1000, 4.0), (48, 196608, 1500, 4.0),
              (64, 262144, 2000, 2.0)]


def test_mixed_cluster_reaches_one_host_of_the_lower_bound() -> None:
    """Issue 16's 1,000-host mixed cluster (seed 1), disk 99 % full on the hosts kept:
    METAHVPLIGHT alone keeps the bound + 2 hosts busy; with the repack, at most bound + 1,
    and the plan passes the checker (draft_from_packing runs it)."""
    doc = generate(1000, per_host=9.2, seed=1, fill=0.6, models=FOUR_SIZES)
    problem = build_problem(parse_scenario(doc).cluster, options={"light": True})
    packing = hvp(problem)
    check(problem, packing)
    busy = len(np.unique(packing.target))
    assert busy <= host_lower_bound(problem) + 1
    draft = draft_from_packing(problem, packing, algorithm="hvp", ranking=None,
                               settings=PlanSettings())
    population = np.bincount(problem.placement, minlength=problem.n_hosts)
    # the hosts the plan leaves empty: an emptied host N+1 keeps on gets its instances back
    names = [h.name for h in problem.cluster.hosts]
    empty = {names.index(h) for h in (*draft.power_off, *draft.spare_hosts, *draft.left_on)}
    assert empty <= set(packing.emptied)
    assert len(draft.migrations) == int(population[sorted(empty)].sum())


def test_fill_places_every_item_or_says_none() -> None:
    """Two bins of room (4, 4) in two columns; four items of (2, 2) fit exactly, five do
    not."""
    room = np.array([[4.0, 4.0], [4.0, 4.0]])
    shapes = np.array([[2.0, 2.0]])
    taken = fill(room, shapes, np.array([4]))
    assert taken is not None and taken.sum(axis=0).tolist() == [4]
    assert np.all(taken @ shapes <= room)
    assert fill(room, shapes, np.array([5])) is None


def test_the_repack_keeps_hard_anti_affinity() -> None:
    """On the 200-host mixed cluster the repack empties one more host; with that host's
    instances made one hard anti-affinity group, the repack still empties it, no two members
    share a host, and the plan passes the checker."""
    doc = generate(200, per_host=9.2, seed=1, fill=0.6, models=FOUR_SIZES)
    problem = build_problem(parse_scenario(doc).cluster, options={"light": True})
    first = hvp(problem)
    assert any("repack" in note for note in first.notes)
    drained = problem.cluster.hosts[first.emptied[-1]].name
    doc["server_groups"] = [{"name": "apart", "policy": "anti-affinity",
                             "members": [i["name"] for i in doc["instances"]
                                         if i["host"] == drained]}]
    problem = build_problem(parse_scenario(doc).cluster, options={"light": True})
    packing = hvp(problem)
    check(problem, packing)                     # members on distinct hosts, among the rest
    assert len(np.unique(packing.target)) <= host_lower_bound(problem) + 1
    assert any("repack" in note for note in packing.notes)
    draft_from_packing(problem, packing, algorithm="hvp", ranking=None,
                       settings=PlanSettings())
