"""-a exact: the fewest hosts CP-SAT finds within a time limit, and how far from the optimum.

The model is exact_model.PlacementModel. The search is seeded with a heuristic's plan (hvp's
METAHVP run, the plan of ``-a hvp``, or the plan the budget search chose, given as the
``seed_target`` option), and never returns worse than that seed. Two phases share the time
limit: the fewest hosts in use (most of the time), then the fewest migrations for that many
hosts. The
packing's first note states the result as proven: "58 hosts in use, optimal" or "61 hosts in
use, at most 3 above the optimum". Whatever the time limit, the answer is the better of
CP-SAT's and the seed (fewer hosts in use, then fewer migrations); when the seed wins, the
note says so: "exact: hvp's METAHVP plan kept, ...; CP-SAT found no solution within the
time limit". The planner orders the waves as for any algorithm.

Options: ``time_limit`` (seconds, default 20), ``workers`` (default 2), and the budgets
``max_migrations``, ``max_moved_gib``, ``target_hosts`` (the budget search passes its own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from consolidator.core.algorithms.base import Packing, Problem
from consolidator.core.algorithms.bounds import host_lower_bound
from consolidator.core.algorithms.budget_search import Limits
from consolidator.core.algorithms.chance import with_chance_column
from consolidator.core.algorithms.exact_model import PlacementModel
from consolidator.core.wording import plural

#: Seconds the solver may take when no time_limit option is given.
DEFAULT_TIME_LIMIT = 20.0
#: Share of the time limit the first phase (fewest hosts) may take.
HOSTS_SHARE = 0.8


@dataclass(frozen=True)
class ExactResult:
    """A solved placement: targets, hosts in use, the fewest hosts found (the first phase),
    the proven lower bound on them, and whether the solver proved that count optimal."""

    target: np.ndarray
    hosts: int
    fewest: int
    bound: int
    optimal: bool

    def describe(self) -> str:
        """'58 hosts in use, optimal' or '61 hosts in use, at most 3 above the optimum'
        (with a target above the optimum: the hosts the target allows, then the optimum)."""
        gap = "optimal" if self.optimal or self.fewest <= self.bound else \
            f"at most {self.fewest - self.bound} above the optimum"
        if self.hosts > self.fewest:
            return (f"{plural(self.hosts, 'host')} in use, as the target allows, for the "
                    f"fewest migrations; {plural(self.fewest, 'host')} possible, {gap}")
        return f"{plural(self.hosts, 'host')} in use, {gap}"


def budgets_of(options: dict[str, Any] | Any) -> Limits:
    """The budgets among the options."""
    def number(key: str, kind: type) -> Any:
        value = options.get(key)
        return None if value is None else kind(value)
    gib = number("max_moved_gib", float)
    return Limits(max_migrations=number("max_migrations", int),
                   max_moved_mib=None if gib is None else int(math.floor(gib * 1024 + 1e-6)),
                   target_hosts=number("target_hosts", int))


def busy_hosts(problem: Problem, target: np.ndarray) -> int:
    """Powered hosts with an instance on them."""
    population = np.bincount(target, minlength=problem.n_hosts)
    return int(np.count_nonzero(problem.powered & (population > 0)))


def moved(problem: Problem, target: np.ndarray) -> int:
    """Instances the target moves."""
    return int(np.count_nonzero(target != problem.placement))


def fits(problem: Problem, target: np.ndarray, budgets: Limits) -> bool:
    """The target keeps within the budgets on migrations and memory moved."""
    moving = target != problem.placement
    mib = float(problem.demand[moving, 1].sum()) if problem.demand.shape[1] > 1 else 0.0
    return ((budgets.max_migrations is None or int(moving.sum()) <= budgets.max_migrations)
            and (budgets.max_moved_mib is None or mib <= budgets.max_moved_mib + 1e-6))


def solve(problem: Problem, budgets: Limits, seed: np.ndarray | None,
          time_limit: float, workers: int = 2, *, fewest_migrations: bool = True,
          whole_hosts: bool = True) -> ExactResult | None:
    """The fewest hosts in use within the budgets (then, if fewest_migrations, the fewest
    migrations for them); None when the solver finds no solution in time. whole_hosts
    False lets a host that stays in use give instances away (a looser yardstick)."""
    problem = with_chance_column(problem)
    built = PlacementModel(problem, budgets, whole_hosts)
    if seed is not None:
        built.hint(seed)
    solver = built.cp_model.CpSolver()
    solver.parameters.num_workers = max(int(workers), 1)
    share = HOSTS_SHARE if fewest_migrations else 1.0
    solver.parameters.max_time_in_seconds = max(time_limit * share, 0.1)
    built.model.Minimize(built.hosts)
    status = solver.Solve(built.model)
    ok = (built.cp_model.OPTIMAL, built.cp_model.FEASIBLE)
    if status not in ok:
        return None
    hosts = int(round(solver.ObjectiveValue()))
    optimal = status == built.cp_model.OPTIMAL
    bound = max(int(math.ceil(solver.BestObjectiveBound() - 1e-6)),
                host_lower_bound(problem) - problem.spare)
    target = built.read(solver)
    bound = min(bound, hosts)
    if not fewest_migrations:
        return ExactResult(target, hosts, hosts, bound, optimal)
    limit = hosts if budgets.target_hosts is None else max(hosts, budgets.target_hosts)
    if seed is not None and busy_hosts(problem, seed) <= limit \
            and fits(problem, seed, budgets) and moved(problem, seed) < moved(problem, target):
        target = seed                   # the heuristic reaches the count more cheaply
    built.model.Add(built.hosts <= limit)
    built.model.ClearHints()
    built.hint(target)
    built.model.Minimize(built.migrations)
    solver.parameters.max_time_in_seconds = max(time_limit * (1 - HOSTS_SHARE), 0.1)
    if solver.Solve(built.model) in ok:
        found = built.read(solver)
        if moved(problem, found) <= moved(problem, target):
            target = found
    after = busy_hosts(problem, target)
    return ExactResult(target, after, min(hosts, after), bound, optimal)


def seed_plan(problem: Problem) -> np.ndarray:
    """The heuristic's plan that seeds the search: hvp's METAHVP run (-a hvp's plan, so that
    exact is never worse than it)."""
    from consolidator.core.algorithms.hvp import hvp

    return hvp(replace(problem, options={}, ranking=None)).target


def exact(problem: Problem) -> Packing:
    """The better of CP-SAT's placement within the time limit and the heuristic plan that
    seeds it (fewer hosts in use, then fewer migrations), with a note saying which."""
    options = problem.options
    given = options.get("seed_target")
    seed = np.asarray(given, dtype=np.int64) if given is not None else seed_plan(problem)
    seed_name = "the budget search's plan" if given is not None else "hvp's METAHVP plan"
    budgets = budgets_of(options)
    result = solve(problem, budgets, seed,
                   float(options.get("time_limit", DEFAULT_TIME_LIMIT)),
                   int(options.get("workers", 2)))
    seed_fits = fits(problem, seed, budgets)
    if result is not None and (not seed_fits or _cost(problem, result.target, budgets) <=
                               _cost(problem, seed, budgets)):
        return _packing(problem, result.target, (f"exact (CP-SAT): {result.describe()}",),
                        result.bound)
    if not seed_fits:
        return Packing(target=problem.placement.copy(), emptied=(),
                       notes=("exact (CP-SAT): no solution within the time limit, and the "
                              "seed plan exceeds the budget; no move",))
    hosts, moves = busy_hosts(problem, seed), moved(problem, seed)
    found = "no solution within the time limit" if result is None else \
        f"its best within the time limit is worse ({result.describe()})"
    return _packing(problem, seed, (
        f"exact: {seed_name} kept, {plural(hosts, 'host')} in use and "
        f"{plural(moves, 'migration')}; CP-SAT found {found}",),
        None if result is None else result.bound)


def _cost(problem: Problem, target: np.ndarray, budgets: Limits) -> tuple[int, int]:
    """What ranks two placements: hosts in use (as few as the target allows counting as
    the target), then migrations."""
    return (max(busy_hosts(problem, target), budgets.target_hosts or 0),
            moved(problem, target))


def _packing(problem: Problem, target: np.ndarray, notes: tuple[str, ...],
             bound: int | None) -> Packing:
    before = np.bincount(problem.placement, minlength=problem.n_hosts)
    after = np.bincount(target, minlength=problem.n_hosts)
    emptied = tuple(int(h) for h in np.flatnonzero((before > 0) & (after == 0)))
    return Packing(target=target, emptied=emptied, notes=notes, proven_bound=bound)
