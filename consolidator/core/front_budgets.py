"""One answer per question: the front's budgeted points, and no plan that the front beats.

A front of each run's prefixes and the fewest-migrations choice's spaced points undersold
the budgeted planner: at a point's migration count N, ``plan --max-migrations N`` may empty
more hosts (the budget-aware search, budget_search.py, or the fewest-migrations choice
between two of its spaced points). So at the count N of each point of the front, the
candidates ``best_within`` weighs for N are added (the fewest-migrations choice within N and
the budget-aware search), the front is made again, and the counts of its new points are
searched the same way, for up to ROUNDS rounds. (A run's prefix that N pays for empties no
more hosts than the fewest-migrations choice within N, for as many migrations or more.)

The work is shared: the fewest-migrations points are prefixes of the largest packing the
front already made, the budget-aware search is one KeepSetSearch whose probes are
remembered across budgets, and it only looks for sets of more hosts than the front already
empties within N (an order that cannot beat that is dropped after one probe).

An algorithm's own plan (plan_fewer_migrations) is the plan of as many hosts with the
fewest migrations among the algorithm's run, -a auto's runs, the fewest-migrations choice
and the budget-aware search.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from consolidator.core.algorithms.base import Ranker
from consolidator.core.algorithms.budget_search import KeepSetSearch, Limits
from consolidator.core.algorithms.catalog import get_algorithm
from consolidator.core.front import (
    BUDGET_SEARCH,
    FAST_ALGORITHMS,
    FAST_OPTIONS,
    FEWEST,
    MADE_BY,
    POINTS_PER_RUN,
    Budget,
    Candidate,
    FrontBuilder,
    FrontPoint,
    fewest_migrations_order,
    fewest_migrations_packing,
    label,
    least_populated,
    non_dominated,
    prefix_packings,
    spaced,
)
from consolidator.core.model import Cluster
from consolidator.core.plan import PlanDraft
from consolidator.core.planner import PlanSettings
from consolidator.core.wording import plural

#: Rounds of budgeted points (the second searches the counts of the points the first added).
ROUNDS = 4


def front(builder: FrontBuilder, algorithms: Sequence[str],
          fast: bool = True) -> dict[str, list[FrontPoint]]:
    """The plans no other beats on hosts left on and migrations (front_budgets: with the
    budgeted planner's own plans at the front's migration counts), by the algorithm or
    search that made them, in the order of `algorithms` (then the budget search); fast runs
    hvp as LIGHT (FAST_OPTIONS), otherwise each algorithm runs with the builder's options."""
    found: list[Candidate] = []
    fewest_top = 0
    if FEWEST in algorithms:
        found += builder.fewest_candidates(len(fewest_migrations_order(builder.problem)))
        largest = builder.fewest_largest
        fewest_top = 0 if largest is None else len(largest.emptied)
    for algorithm in algorithms:
        if algorithm != FEWEST:
            packing = builder.run(algorithm, FAST_OPTIONS.get(algorithm) if fast else None)
            # A prefix of c hosts the fewest-migrations choice also empties moves at least
            # as much for as many hosts: only the longer prefixes and the whole run count.
            total = len(packing.emptied)
            found += builder.algorithm_candidates(
                algorithm, packing, [c for c in spaced(total, POINTS_PER_RUN)
                                     if c > fewest_top or c == total])
    found = at_counts(builder, found)
    # Costs are estimated as the plans will have them: only the survivors are drafted.
    out: dict[str, list[FrontPoint]] = {name: [] for name in (*algorithms, BUDGET_SEARCH)}
    for candidate in non_dominated(found):
        out[candidate.algorithm].append(builder.draft(candidate))
    return {name: points for name, points in out.items() if points}


def at_counts(builder: FrontBuilder, found: Sequence[Candidate]) -> list[Candidate]:
    """The candidates and, at the migration count of each point of their front, the
    budgeted planner's candidates for that count."""
    out = list(found)
    searched: set[int] = {0}
    search: KeepSetSearch | None = None
    for _ in range(ROUNDS):
        counts = sorted({c.migrations for c in non_dominated(out)} - searched)
        if not counts:
            break
        searched.update(counts)
        added = fewest_at(builder, counts)
        out += added
        if search is None:
            search = KeepSetSearch(builder.problem, Limits(), memo=True)
        for count in counts:
            within = [c for c in out if c.migrations <= count]
            beyond = max((len(c.packing.emptied) for c in within), default=0)
            out += searched_at(builder, search, count, beyond)
    return out


def fewest_at(builder: FrontBuilder, counts: Sequence[int]) -> list[Candidate]:
    """The fewest-migrations choice within each count: the most hosts its lower bounds pay
    for, no more than the largest k it packs (prefixes of that packing)."""
    largest = builder.fewest_largest
    if largest is None:
        return []
    order = fewest_migrations_order(builder.problem)
    ks = sorted({min(builder.affordable(order, Budget(max_migrations=n)),
                     len(largest.emptied)) for n in counts} - {0})
    prefixes = prefix_packings(builder.problem, largest,
                               [k for k in ks if k < len(largest.emptied)])
    out = []
    for k in ks:
        packing = prefixes.get(k, largest)
        if len(packing.emptied) == k:
            out.append(builder.estimate(packing, FEWEST, least_populated(k)))
    return out


def searched_at(builder: FrontBuilder, search: KeepSetSearch, count: int,
                beyond: int) -> list[Candidate]:
    """The budget-aware search's plan within `count` migrations, if it empties more than
    `beyond` hosts."""
    found = search.with_limits(Limits(max_migrations=count)).most_hosts(beyond)
    if found is None or len(found.hosts) <= beyond:
        return []
    packing = search.packing(found, f"budget search: {plural(len(found.hosts), 'host')} "
                                    f"emptied within {plural(count, 'migration')}")
    if packing is None:
        return []
    return [builder.estimate(packing, BUDGET_SEARCH,
                             f"{plural(len(packing.emptied), 'host')} chosen by capacity and "
                             f"population within {plural(count, 'migration')}")]


def plan_fewer_migrations(builder: FrontBuilder, algorithm: str) -> PlanDraft:
    """The algorithm's own plan, unless a plan leaves no more hosts on for fewer migrations:
    the fewest-migrations choice or the budget-aware search's cheapest set of as many hosts
    (what the front has there); then that plan, with draft.choice saying why."""
    name = get_algorithm(algorithm).name
    packing = builder.run(algorithm)
    own = builder.estimate(packing, name, "its whole run")
    cheaper = [c for c in as_many_hosts(builder, own.hosts_after, name)
               if c.hosts_after <= own.hosts_after and c.migrations < own.migrations]
    if not cheaper:
        return builder.point(packing, name, own.how).draft
    chosen = builder.draft(min(cheaper, key=lambda c: (c.migrations, c.moved_gib,
                                                       c.hosts_after)))
    why = (f"{label(chosen)} leaves {plural(chosen.hosts_after, 'host')} on with "
           f"{plural(chosen.migrations, 'migration')}, where {name}'s own run needs "
           f"{plural(own.migrations, 'migration')} for {plural(own.hosts_after, 'host')}")
    choice = {"asked": algorithm, "algorithm": chosen.draft.algorithm,
              "search": chosen.algorithm if chosen.algorithm in MADE_BY else None,
              "how": chosen.how, "budget": Budget().to_json(),
              "moved_gib": round(chosen.moved_gib, 1), "why": why}
    return replace(chosen.draft, choice=choice,
                   notes=(*chosen.draft.notes, f"fewer migrations for as many hosts: {why}"))


def as_many_hosts(builder: FrontBuilder, hosts_on: int, algorithm: str) -> list[Candidate]:
    """Plans that may leave `hosts_on` hosts on: -a auto's runs (the front's), and the
    fewest-migrations choice and the budget-aware search's cheapest set emptying the hosts
    needed (one more, for a host N+1 keeps on, when that is short)."""
    p = builder.problem
    out = [builder.estimate(builder.run(name, FAST_OPTIONS.get(name)), name, "its whole run")
           for name in FAST_ALGORITHMS if name != algorithm]
    need = max(int(p.powered.sum()) - hosts_on + p.spare, 1)
    pool = len(fewest_migrations_order(p))
    for k in (need, need + 1):
        packing = fewest_migrations_packing(p, k) if k <= pool else None
        if packing is not None:
            out.append(builder.estimate(packing, FEWEST, least_populated(k)))
            if out[-1].hosts_after <= hosts_on:
                break
    search = KeepSetSearch(p, Limits(target_hosts=hosts_on))
    for size in (need, need + 1):
        found = search.cheapest_of_size(size) if size <= len(search.pool) else None
        packing = None if found is None else search.packing(
            found, f"budget search: the cheapest {plural(size, 'host')} to empty")
        if packing is not None:
            out.append(builder.estimate(packing, BUDGET_SEARCH,
                                        f"{plural(size, 'host')} chosen by capacity and "
                                        f"population"))
            if out[-1].hosts_after <= hosts_on:
                break
    return out


def plan_own(cluster: Cluster, algorithm: str, *, settings: PlanSettings, spare: int = 0,
             options: dict[str, Any] | None = None, ranking: Ranker | None = None,
             no_bmc: Collection[str] = ()) -> PlanDraft:
    """plan_cluster's arguments: the algorithm's plan, or one with fewer migrations for as
    many hosts (plan_fewer_migrations)."""
    builder = FrontBuilder(cluster, settings, spare=spare, options=options, ranking=ranking,
                           no_bmc=no_bmc)
    return plan_fewer_migrations(builder, algorithm)
