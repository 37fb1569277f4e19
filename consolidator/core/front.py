"""The front of hosts against migrations, and budgets that pick a point of it.

A plan has three costs the operator trades: hosts left on, migrations, and the memory (GiB)
those migrations move (a live migration's cost grows with its RAM). A point is a checked plan;
the front keeps the points no other point beats on hosts and migrations, the least GiB among
equals (front_budgets.front makes it, with the budgeted planner's plans at its counts).

Points come cheaply from what the algorithms already do: a run empties hosts in an order, and
every prefix of that order is a plan of its own (``prefix_packing``). The migration-minimising
choice of WHICH hosts to empty for a count k is the k least populated hosts (fewest memory
first among equal populations), packed away by METAHVPLIGHT (``fewest_migrations_packing``):
when it packs, its migrations equal the migration lower bound for k, and the GiB moved is the
least of any choice of k hosts with those populations.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from consolidator.core.algorithms.base import Packing, Problem, Ranker
from consolidator.core.algorithms.bounds import budget_host_bound
from consolidator.core.algorithms.budget_search import Limits, budget_packing
from consolidator.core.algorithms.catalog import get_algorithm
from consolidator.core.algorithms.chance import with_chance_column
from consolidator.core.algorithms.hvp import (
    Witness,
    ZoneSearch,
    apply,
    column_scale,
    select_strategies,
)
from consolidator.core.algorithms.repair import guided_prefixes
from consolidator.core.algorithms.state import PackingState
from consolidator.core.checker import MoveMemo
from consolidator.core.constraints import build_problem
from consolidator.core.kept_hosts import keep_home
from consolidator.core.model import Cluster
from consolidator.core.plan import PlanDraft
from consolidator.core.planner import PlanSettings, draft_from_packing, power_decisions
from consolidator.core.wording import plural

#: The name of the migration-minimising choice of hosts, as a point's algorithm.
FEWEST = "fewest-migrations"
#: The exact solver's -a name: within a budget it is seeded with the best fast plan.
EXACT = "exact"
#: The name of the budget-aware search (budget_search.py), as a point's algorithm.
BUDGET_SEARCH = "budget-search"
#: The registered algorithm whose packing a search's points are (a plan names it).
MADE_BY = {FEWEST: "hvp", BUDGET_SEARCH: "hvp"}
#: The algorithms -a auto runs (each under a second at 1,000 hosts); with a budget, FEWEST
#: as well. firstfit is left out: zoned-bestfit's plans dominate its plans on the mixed and
#: identical clusters of tools/bench (fewer hosts for fewer migrations).
FAST_ALGORITHMS = ("zoned-bestfit", "hvp")
#: The algorithms plan --front runs for auto (then FEWEST): firstfit's points were all
#: beaten in the one front (front_budgets.py) on the bundled and generated clusters.
FRONT_ALGORITHMS = FAST_ALGORITHMS
#: The options -a auto and the front give an algorithm (hvp: LIGHT, a tenth of METAHVP's time).
FAST_OPTIONS: dict[str, dict[str, object]] = {"hvp": {"light": True}}
#: Prefix points taken per algorithm run for the front.
POINTS_PER_RUN = 12


@dataclass(frozen=True)
class FrontPoint:
    """One checked plan and how it was made."""

    algorithm: str
    how: str
    draft: PlanDraft
    moved_gib: float

    @property
    def hosts_after(self) -> int:
        """Hosts left on."""
        return self.draft.hosts_after

    @property
    def migrations(self) -> int:
        """Migrations planned."""
        return len(self.draft.migrations)

    def costs(self) -> tuple[int, int, float]:
        """(hosts left on, migrations, GiB moved): the three axes, all minimised."""
        return self.hosts_after, self.migrations, self.moved_gib

    def to_json(self) -> dict[str, object]:
        """The point as plain data."""
        return {"algorithm": self.algorithm, "how": self.how, "hosts_after": self.hosts_after,
                "hosts_freed": self.draft.hosts_before - self.hosts_after,
                "migrations": self.migrations, "moved_gib": round(self.moved_gib, 1),
                "migrations_lower_bound": self.draft.migrations_lower_bound,
                "lower_bound": self.draft.lower_bound}


@dataclass(frozen=True)
class Candidate:
    """A packing not yet made into a plan, with its costs (hosts left on, migrations, GiB
    moved) as its plan will have them: cheap to compare, drafted only if chosen."""

    algorithm: str
    how: str
    packing: Packing
    hosts_after: int
    migrations: int
    moved_gib: float

    def costs(self) -> tuple[int, int, float]:
        """(hosts left on, migrations, GiB moved)."""
        return self.hosts_after, self.migrations, self.moved_gib


@dataclass(frozen=True)
class Budget:
    """What the operator allows: None is no limit."""

    max_migrations: int | None = None
    max_moved_gib: float | None = None
    target_hosts: int | None = None

    @property
    def unlimited(self) -> bool:
        """No limit is set."""
        return self.max_migrations is None and self.max_moved_gib is None \
            and self.target_hosts is None

    def fits(self, point: FrontPoint | Candidate) -> bool:
        """The point keeps within every limit on migrations and GiB moved."""
        return ((self.max_migrations is None or point.migrations <= self.max_migrations)
                and (self.max_moved_gib is None
                     or point.moved_gib <= self.max_moved_gib + 1e-9))

    def describe(self) -> str:
        """The limits in words."""
        parts = []
        if self.max_migrations is not None:
            parts.append(f"at most {plural(self.max_migrations, 'migration')}")
        if self.max_moved_gib is not None:
            parts.append(f"at most {self.max_moved_gib:g} GiB moved")
        if self.target_hosts is not None:
            parts.append(f"{plural(self.target_hosts, 'host')} left on")
        return ", ".join(parts) or "no budget"

    def to_json(self) -> dict[str, object]:
        """The limits as plain data."""
        return {"max_migrations": self.max_migrations, "max_moved_gib": self.max_moved_gib,
                "target_hosts": self.target_hosts}


def moved_gib(cluster: Cluster, draft: PlanDraft) -> float:
    """The memory, in GiB, of the instances a plan migrates."""
    index, instances = cluster.instance_index, cluster.instances
    return float(sum(instances[index[m.instance_id]].memory_mb for m in draft.migrations)) \
        / 1024.0


Point = TypeVar("Point", FrontPoint, Candidate)


def dominates(a: FrontPoint | Candidate, b: FrontPoint | Candidate) -> bool:
    """a is no worse than b on every axis and better on one."""
    ca, cb = a.costs(), b.costs()
    return all(x <= y + 1e-9 for x, y in zip(ca, cb, strict=True)) and ca != cb


def beats(a: FrontPoint | Candidate, b: FrontPoint | Candidate) -> bool:
    """a leaves no more hosts on for no more migrations, and is better on one of them (or,
    equal on both, moves less memory): what a --max-migrations plan compares."""
    if a.hosts_after > b.hosts_after or a.migrations > b.migrations:
        return False
    return (a.hosts_after, a.migrations) != (b.hosts_after, b.migrations) \
        or a.moved_gib < b.moved_gib - 1e-9


def non_dominated(points: Iterable[Point]) -> list[Point]:
    """The points no other point beats on hosts and migrations (the least GiB moved among
    equals), one per cost triple, fewest hosts first; no point of them is dominated on the
    three axes either."""
    unique: dict[tuple[int, int, float], Point] = {}
    for point in points:
        key = (point.hosts_after, point.migrations, round(point.moved_gib, 6))
        unique.setdefault(key, point)
    pool = sorted(unique.values(), key=lambda p: p.costs())
    kept: list[Point] = []
    for point in pool:             # by hosts, then migrations: a point is beaten only by
        if not kept or point.migrations < kept[-1].migrations:    # an earlier one
            kept.append(point)
    return kept


def pick(points: Iterable[Point], budget: Budget) -> Point | None:
    """The best point within the budget: with a target, the cheapest point that reaches it
    (else the fewest hosts); otherwise the fewest hosts, then fewest migrations and GiB."""
    fitting = [p for p in points if budget.fits(p)]
    if not fitting:
        return None
    if budget.target_hosts is not None:
        reaching = [p for p in fitting if p.hosts_after <= budget.target_hosts]
        if reaching:
            return min(reaching, key=lambda p: (p.migrations, p.moved_gib, p.hosts_after))
    return min(fitting, key=lambda p: p.costs())



def fewest_migrations_order(problem: Problem) -> np.ndarray:
    """Emptiable, populated hosts: least populated first, then least memory used."""
    population = np.bincount(problem.placement, minlength=problem.n_hosts)
    memory = np.bincount(problem.placement, weights=problem.demand[:, 1],
                         minlength=problem.n_hosts) if problem.n_instances \
        else np.zeros(problem.n_hosts)
    rows = np.flatnonzero(problem.emptiable & problem.powered & (population > 0))
    return rows[np.lexsort((rows, memory[rows], population[rows]))]


def fewest_witnesses(problem: Problem, k: int, state: PackingState) -> list[Witness] | None:
    """METAHVPLIGHT's packings, zone by zone, of the first k hosts of
    fewest_migrations_order into the others; None when a zone's share does not pack."""
    hosts = fewest_migrations_order(problem)[:k]
    tried = select_strategies({"light": True})
    scale = column_scale(problem)
    witnesses = []
    for zone in np.unique(problem.host_zone[hosts]).tolist():
        order = hosts[problem.host_zone[hosts] == zone]
        found = ZoneSearch(problem, state, zone, tried, scale).probe(order, len(order), tried)
        if found is None:
            return None
        witnesses.append(found)
    return witnesses


def fewest_migrations_packing(problem: Problem, k: int,
                              witnesses: list[Witness] | None = None) -> Packing | None:
    """Empty the first k hosts of fewest_migrations_order, packed by METAHVPLIGHT, or None
    when they do not pack (witnesses: fewest_witnesses' for k, when already known)."""
    hosts = fewest_migrations_order(problem)[:k]
    problem = with_chance_column(problem)
    state = PackingState(problem)
    if witnesses is None:
        witnesses = fewest_witnesses(problem, k, state)
    if witnesses is None:
        return None
    if not apply(state, witnesses, problem.ranking is not None) \
            and not apply(state, witnesses, False):
        return None
    return state.packing([int(h) for h in hosts],
                         [f"{FEWEST}: {least_populated(len(hosts))} emptied "
                          f"(METAHVPLIGHT); migrations at their lower bound"])


def least_populated(k: int) -> str:
    """'the least populated host', 'the 3 least populated hosts'."""
    return "the least populated host" if k == 1 else f"the {k} least populated hosts"


def prefix_packing(problem: Problem, packing: Packing, count: int) -> Packing:
    """Only the first `count` hosts the packing emptied, following its targets where they
    are still feasible (best fit otherwise); a host that no longer empties stays whole."""
    return prefix_packings(problem, packing, [count])[count]


def prefix_packings(problem: Problem, packing: Packing, counts: Sequence[int]
                    ) -> dict[int, Packing]:
    """prefix_packing for each count, the replays shared where they are alike."""
    replays = guided_prefixes(problem, packing.target, packing.emptied, counts)
    return {count: Packing(target=target,
                           emptied=tuple(h for h in packing.emptied[:count] if h not in failed))
            for count, (target, failed) in replays.items()}


def spaced(top: int, count: int) -> list[int]:
    """About `count` integers from 0 to top, both ends included, evenly spaced."""
    if top <= 0:
        return [0]
    return sorted({round(top * n / max(count - 1, 1)) for n in range(count)} | {top})


class FrontBuilder:
    """Makes checked points for one cluster under one set of settings."""

    def __init__(self, cluster: Cluster, settings: PlanSettings, *, spare: int = 0,
                 options: dict[str, object] | None = None, ranking: Ranker | None = None,
                 no_bmc: Collection[str] = ()) -> None:
        self.cluster, self.settings, self.no_bmc = cluster, settings, no_bmc
        self.problem = build_problem(cluster, settings.rules, spare=spare,
                                     options=dict(options or {}), ranking=ranking,
                                     usage=settings.usage)
        self.ranking = ranking.name if ranking is not None else None
        self.memory = np.array([i.memory_mb for i in cluster.instances], dtype=np.float64)
        self.memo = MoveMemo(cluster, settings.rules)    # the points share most moves
        #: The last k largest_fewest_k packed, with its witnesses.
        self.fewest_found: tuple[int, list[Witness] | None] = (0, None)
        #: The largest fewest-migrations packing fewest_candidates made (its prefixes are
        #: the others), for the front's budgeted points.
        self.fewest_largest: Packing | None = None

    def estimate(self, packing: Packing, algorithm: str, how: str) -> Candidate:
        """A packing's costs without drafting it: the hosts its plan leaves on (spares,
        the last host of a zone, N+1 and hosts without a BMC kept on, as the plan will),
        migrations and GiB moved."""
        p = self.problem
        target, decided, _ = keep_home(p, packing.target, lambda q, t: power_decisions(
            q, t, self.settings, self.no_bmc))
        moved, off = target != p.placement, decided.power_off
        hosts = int(p.powered.sum()) - len(off)
        return Candidate(algorithm, how, packing, hosts, int(moved.sum()),
                         float(self.memory[moved].sum()) / 1024.0)

    def draft(self, candidate: Candidate) -> FrontPoint:
        """The candidate made into a checked plan."""
        return self.point(candidate.packing, candidate.algorithm, candidate.how)

    def point(self, packing: Packing, algorithm: str, how: str) -> FrontPoint:
        """A packing made into a checked plan (the checker runs in draft_from_packing)."""
        draft = draft_from_packing(self.problem, packing,
                                   algorithm=MADE_BY.get(algorithm, algorithm),
                                   ranking=self.ranking, settings=self.settings,
                                   no_bmc=self.no_bmc, memo=self.memo)
        return FrontPoint(algorithm, how, draft, moved_gib(self.cluster, draft))

    def run(self, algorithm: str, options: dict[str, object] | None = None) -> Packing:
        """An algorithm's own packing of the problem (extra options merged)."""
        problem = self.problem
        if options:
            problem = replace(problem, options={**problem.options, **options})
        return get_algorithm(algorithm).run(problem)

    def algorithm_candidates(self, algorithm: str, packing: Packing,
                             counts: Sequence[int] | None = None) -> list[Candidate]:
        """Candidates from prefixes of the hosts an algorithm's packing emptied."""
        total = len(packing.emptied)
        found = []
        counts = counts if counts is not None else spaced(total, POINTS_PER_RUN)
        prefixes = prefix_packings(self.problem, packing, [c for c in counts if c < total])
        for count in counts:
            chosen = packing if count >= total else prefixes[count]
            how = "its whole run" if count >= total else "no migration" if count == 0 else \
                f"the first {count} of the {plural(total, 'host')} it empties"
            found.append(self.estimate(chosen, algorithm, how))
        return found

    def fewest_candidate(self, k: int) -> Candidate | None:
        """The migration-minimising packing that empties k hosts, if it packs."""
        packing = fewest_migrations_packing(self.problem, k)
        if packing is None:
            return None
        return self.estimate(packing, FEWEST, least_populated(k) if k else "no migration")

    def fewest_point(self, k: int) -> FrontPoint | None:
        """The migration-minimising plan that empties k hosts, if it packs."""
        found = self.fewest_candidate(k)
        return None if found is None else self.draft(found)

    def largest_fewest_k(self, top: int) -> int:
        """The largest k <= top that fewest_migrations_packing packs (binary search on the
        packing alone, feasibility taken as monotone in k); its witnesses are kept in
        self.fewest_found."""
        lo, hi = 0, top + 1
        problem = with_chance_column(self.problem)
        state = PackingState(problem)      # probes read it, never change it
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = fewest_witnesses(problem, mid, state)
            if found is None:
                hi = mid
            else:
                lo, self.fewest_found = mid, (mid, found)
        return lo

    def within_budget_k(self, budget: Budget) -> int:
        """The most hosts the fewest-migrations choice may empty within the budget's
        migrations and GiB (the lower bounds for k) and, with a target, no more than needed."""
        top = self.affordable(fewest_migrations_order(self.problem), budget)
        if budget.target_hosts is not None:
            need = int(self.problem.powered.sum()) - budget.target_hosts + self.problem.spare
            top = min(top, max(need, 0) + 1 + int(self.settings.n_plus_one))
        return top

    def affordable(self, hosts: Sequence[int] | np.ndarray, budget: Budget) -> int:
        """How many of the hosts, in order, can be emptied within the budget's migrations
        and GiB when each moves its own instances once (the populations and memory now)."""
        p = self.problem
        rows = np.asarray(hosts, dtype=np.int64)
        population = np.bincount(p.placement, minlength=p.n_hosts)[rows]
        gib = np.bincount(p.placement, weights=self.memory, minlength=p.n_hosts)[rows] / 1024.0 \
            if p.n_instances else np.zeros(len(rows))
        count = len(rows)
        for limit, costs in ((budget.max_migrations, population),
                             (budget.max_moved_gib, gib)):
            if limit is not None:
                count = min(count, int(np.searchsorted(np.cumsum(costs), limit + 1e-9,
                                                       side="right")))
        return count

    def fewest_within(self, budget: Budget) -> Candidate | None:
        """The fewest-migrations plan for the budget: the most hosts within its migrations
        and GiB; with a target, the fewest hosts that reach it (or the most short of it)."""
        top = self.within_budget_k(budget)
        best = self.largest_fewest_k(top)
        ks = [best]
        if budget.target_hosts is not None:
            need = int(self.problem.powered.sum()) - budget.target_hosts + self.problem.spare
            ks = list(range(max(need, 1), best)) + ks
        for k in ks:
            packing = fewest_migrations_packing(self.problem, k) if k else None
            if packing is None:
                continue
            found = self.estimate(packing, FEWEST, least_populated(k))
            if budget.target_hosts is not None:      # the plan's own count, N+1 included
                found = replace(found, hosts_after=self.draft(found).hosts_after)
            if k == best or budget.target_hosts is None \
                    or found.hosts_after <= budget.target_hosts:
                return found
        return None

    def budget_search(self, budget: Budget) -> list[Candidate]:
        """The budget-aware search's plan (budget_search.py), if it finds one that fits."""
        packing = budget_packing(self.problem, Limits(
            budget.max_migrations,
            None if budget.max_moved_gib is None else budget.max_moved_gib * 1024.0,
            budget.target_hosts))
        if packing is None:
            return []
        found = self.estimate(packing, BUDGET_SEARCH,
                              f"{plural(len(packing.emptied), 'host')} chosen by capacity and "
                              f"population")
        return [found] if budget.fits(found) else []

    def exact(self, budget: Budget, seed: Candidate | None) -> Candidate:
        """CP-SAT's plan within the budget, seeded with a plan (the best heuristic's)."""
        options: dict[str, object] = {"max_migrations": budget.max_migrations,
                                      "max_moved_gib": budget.max_moved_gib,
                                      "target_hosts": budget.target_hosts}
        if seed is not None:
            options["seed_target"] = seed.packing.target
        packing = self.run(EXACT, {k: v for k, v in options.items() if v is not None})
        return self.estimate(packing, EXACT, packing.notes[-1] if packing.notes else "CP-SAT")

    def fewest_candidates(self, top: int) -> list[Candidate]:
        """Fewest-migrations candidates from none to the most hosts it can empty up to top:
        the largest is packed, the others are its prefixes (a subset of its moves into the
        same hosts always fits, so each is the fewest-migrations packing of its k)."""
        best = self.largest_fewest_k(top)
        known = self.fewest_found[1] if self.fewest_found[0] == best else None
        largest = fewest_migrations_packing(self.problem, best, known) if best else None
        self.fewest_largest = largest
        if largest is None:
            found = [self.fewest_candidate(k) for k in spaced(best, POINTS_PER_RUN)]
            return [c for c in found if c is not None]
        out = []
        prefixes = prefix_packings(self.problem, largest,
                                   [k for k in spaced(best, POINTS_PER_RUN) if k < best])
        for k in spaced(best, POINTS_PER_RUN):
            packing = largest if k >= best else prefixes[k]
            if len(packing.emptied) == k:
                out.append(self.estimate(packing, FEWEST,
                                         least_populated(k) if k else "no migration"))
        return out


def best_within(builder: FrontBuilder, algorithms: Sequence[str], budget: Budget,
                fast: bool = True) -> tuple[FrontPoint, str]:
    """The plan that frees the most hosts within the budget, among the algorithms' runs (and
    their prefixes, when a run overruns the budget) and the fewest-migrations choice; and why
    it won. Candidates are compared on estimated costs; only the winner is drafted."""
    candidates: list[Candidate] = []
    for algorithm in algorithms:
        if algorithm in (FEWEST, EXACT):
            continue
        packing = builder.run(algorithm, FAST_OPTIONS.get(algorithm) if fast else None)
        whole = builder.estimate(packing, algorithm, "its whole run")
        candidates.append(whole)
        if not budget.unlimited and not budget.fits(whole):
            candidates.extend(_fitting_prefix(builder, algorithm, packing, budget))
    if not budget.unlimited:
        found = builder.fewest_within(budget)
        if found is not None:
            candidates.append(found)
        candidates.extend(builder.budget_search(budget))
    candidates.append(builder.estimate(Packing(target=builder.problem.placement.copy(),
                                               emptied=()), algorithms[0], "no migration"))
    if EXACT in algorithms:         # seeded with the best of the heuristics' plans
        candidates.insert(0, builder.exact(budget, pick(candidates, budget)))  # wins ties
    chosen = pick(candidates, budget)
    assert chosen is not None     # the empty plan fits every budget
    point = builder.draft(chosen)
    return point, _why(point, [c for c in candidates if c is not chosen], budget)


def _fitting_prefix(builder: FrontBuilder, algorithm: str, packing: Packing,
                    budget: Budget) -> list[Candidate]:
    """The longest prefix of a run that fits the budget: the count from the original
    populations and memory of the hosts it empties (what a prefix moves when it empties them
    all), then the prefix itself, one host shorter while it overruns."""
    problem, emptied = builder.problem, list(packing.emptied)
    count = builder.affordable(emptied, budget)
    while count > 0:
        found = builder.estimate(prefix_packing(problem, packing, count), algorithm,
                                 f"the first {count} of the "
                                 f"{plural(len(emptied), 'host')} it empties")
        if budget.fits(found):
            return [found]
        count -= 1
    return []


def label(point: FrontPoint | Candidate) -> str:
    """The algorithm and how it made the point: a search's points name the algorithm whose
    packing they are, and the search."""
    made_by = MADE_BY.get(point.algorithm)
    if made_by is None:
        return f"{point.algorithm} ({point.how})"
    return f"{made_by} ({point.algorithm} point within the budget: {point.how})"


def _why(chosen: FrontPoint, candidates: Sequence[Candidate], budget: Budget) -> str:
    """One sentence: which plan won, against what, within which budget."""
    others = "; ".join(f"{label(p)}: {plural(p.hosts_after, 'host')} on, "
                       f"{plural(p.migrations, 'migration')}, {p.moved_gib:.0f} GiB"
                       + ("" if budget.fits(p) else " [over budget]")
                       for p in candidates)
    target = budget.target_hosts
    if target is not None and chosen.hosts_after <= target:
        goal = "reaches the target with the fewest migrations"
    elif target is not None:
        below = f"; the lower bound is {plural(chosen.draft.lower_bound, 'host')}" \
            if target < chosen.draft.lower_bound else ""
        goal = (f"frees the most hosts but does not reach the target of "
                f"{plural(target, 'host')} left on{below}")
    else:
        goal = "frees the most hosts"
    within = "with no budget" if budget.unlimited else f"within {budget.describe()}"
    return (f"{label(chosen)} {goal} {within}: "
            f"{plural(chosen.hosts_after, 'host')} on, {plural(chosen.migrations, 'migration')}, "
            f"{chosen.moved_gib:.0f} GiB moved. Also tried: {others or 'nothing else'}")


#: The -a name that runs the fast algorithms and keeps the best plan within the budget.
AUTO = "auto"


def plan_within(builder: FrontBuilder, algorithm: str, budget: Budget) -> PlanDraft:
    """The plan of `algorithm` (AUTO: the fast ones) that frees the most hosts within the
    budget, checked, with the choice recorded in draft.choice."""
    algorithms = FAST_ALGORITHMS if algorithm == AUTO else \
        (*FAST_ALGORITHMS, EXACT) if algorithm == EXACT else (algorithm,)
    chosen, why = best_within(builder, algorithms, budget, fast=algorithm in (AUTO, EXACT))
    search = chosen.algorithm if chosen.algorithm in MADE_BY else None
    choice = {"asked": algorithm, "algorithm": chosen.draft.algorithm, "search": search,
              "how": chosen.how,
              "budget": budget.to_json(), "moved_gib": round(chosen.moved_gib, 1),
              "why": why}
    p = builder.problem
    bound = budget_host_bound(p, budget.max_migrations, None if budget.max_moved_gib is None
                              else budget.max_moved_gib * 1024.0) + p.spare
    bound = max(chosen.draft.lower_bound, min(bound, int(p.powered.sum())))
    return replace(chosen.draft, choice=choice, lower_bound=bound)
