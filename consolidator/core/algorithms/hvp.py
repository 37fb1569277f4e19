"""Heterogeneous vector packing (paper 002, Stillwell, Vivien, Casanova): METAHVP and LIGHT.

The paper binary-searches the largest yield for which one of its vector packing heuristics
(3.5.1 First Fit, Best Fit, 3.5.2 Permutation Pack, each under the 3.5 sorting strategies;
hvp_pack.py) packs every service. Here the searched quantity is k, the number of hosts to
empty, and the question asked of METAHVP (3.5.5; METAHVPLIGHT of 5.1 with ``light``) is: do
the instances of those k hosts pack into the residual capacity vectors of the other hosts,
over every resource column?

The search, zone by zone (an instance never leaves its availability zone, so zones are
independent problems and their best k add up):

1. The k hosts are the k least populated emptiable hosts, so a feasible k costs the fewest
   migrations possible for k (the sum of the k smallest populations, the lower bound).
2. k is bounded above by volume: the instances of those hosts must fit, column by column, in
   the total free capacity of the others. Every heuristic fails beyond that bound.
3. A binary search with the cheap Best Fit heuristics finds a k that is surely feasible;
   a second binary search with the whole METAHVP (or LIGHT) set goes from there to the volume
   bound. Feasibility is assumed monotone in k, as the paper assumes it in the yield. The
   other host orders (step 4) then binary-search on from the k found to their own volume
   bounds: one order can stop hundreds of hosts below another, a gap step 4 alone would
   close one probe per host.
4. Local refinement (beyond the paper, which has no host choice): k+1, k+2, ... are tried
   with the least populated hosts and then with the least loaded hosts (which free more
   room), until both fail; heuristics are not monotone, and this recovers a host now and then.
5. While the hosts in use exceed the lower bound, one more host is emptied by repacking the
   instances already moving together with its own (drain.py, beyond the paper).

Beyond the paper as well: a bin is a host's residual capacity after the instances that stay,
hosts already empty receive nothing (filling them would not lower the host count), and hard
anti-affinity is a constraint of every heuristic (a grouped item never shares a bin with its
group), and so is the chance constraint of paper 003 under capacity model ucac, as a linear
column that implies it (chance.py). Soft policies and rankings act when the packing is
applied: each instance's target is routed through the ranking among the packing's bins; if
the ranked choices fail to empty every chosen host, the heuristic's own targets are used
instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from consolidator.core.algorithms.base import Packing, Problem
from consolidator.core.algorithms.bounds import (
    PLACEMENT_COLUMNS,
    fewest_hosts_covering,
    host_lower_bound,
)
from consolidator.core.algorithms.chance import with_chance_column
from consolidator.core.algorithms.drain import drain_more
from consolidator.core.algorithms.hvp_fast import MARGIN
from consolidator.core.algorithms.hvp_pack import Strategy, VPInstance, meta_hvp, strategies
from consolidator.core.algorithms.state import PackingState
from consolidator.core.errors import UsageError
from consolidator.core.wording import plural

#: A packing witness: hosts emptied in order, instances moved, their target hosts, heuristic.
Witness = tuple[np.ndarray, np.ndarray, np.ndarray, str]


def select_strategies(options: Mapping[str, Any]) -> list[Strategy]:
    """The heuristics to try: LIGHT's or all, restricted by names or 'ff'/'bf'/'pp' if given."""
    tried = strategies(bool(options.get("light", False)))
    wanted = options.get("strategies")
    if wanted:
        listed = wanted.split(",") if isinstance(wanted, str) else wanted
        names = {str(w).strip() for w in listed}
        tried = [s for s in tried if s.name in names or s.algo in names]
        if not tried:
            raise UsageError(f"hvp: no heuristic matches {sorted(names)}: give 'ff', 'bf', "
                             f"'pp' or names such as 'pp/MAX-desc/LEX-asc'")
    return tried


class ZoneSearch:
    """The search for the most hosts of one availability zone that METAHVP can empty."""

    def __init__(self, problem: Problem, state: PackingState, zone: int,
                 tried: list[Strategy], scale: np.ndarray) -> None:
        self.problem, self.tried, self.scale = problem, list(tried), scale
        self.free = state.free.copy()
        population = state.population
        in_zone = problem.host_zone == zone
        rows = np.arange(problem.n_hosts)
        used = (problem.capacity - self.free) / scale
        load = used.sum(axis=1)
        pool = rows[problem.emptiable & in_zone & (population > 0)]
        size = (problem.capacity / scale).sum(axis=1)
        self.population = population
        self.orders = {
            "smallest capacity": pool[np.lexsort((pool, population[pool], size[pool]))],
            "fewest migrations": pool[np.lexsort((pool, load[pool], population[pool]))],
            "least load": pool[np.lexsort((pool, population[pool], load[pool]))]}
        self.bins_mask = problem.receivers & in_zone & (population > 0)
        self.groups = [rows_ for rows_ in problem.anti_affinity if len(rows_) > 1]
        self.cap = self.zone_cap(in_zone) if in_zone.any() else 0
        self.failed: set[tuple[bytes, int]] = set()      # (hosts, k) METAHVP cannot pack

    def volume_bound(self, order: np.ndarray) -> int:
        """The largest k whose hosts' demand fits, column by column, in the others' room,
        and no more than the zone's hosts in use less its lower bound (beyond that every
        probe fails, so the search ends there)."""
        return min(self._volume_bound(order), self.cap)

    def zone_cap(self, zone_hosts: np.ndarray) -> int:
        """The zone's populated hosts less the fewest hosts that cover its demand (by the
        Placement columns and, under ucac, the mean usage): no k above it packs."""
        p = self.problem
        busy = zone_hosts & (self.population > 0)
        items = p.host_zone[p.placement] == int(p.host_zone[np.flatnonzero(zone_hosts)[0]]) \
            if p.n_instances else np.zeros(0, dtype=bool)
        need = 0
        cap_rows = p.capacity[zone_hosts & p.powered]
        for r in range(min(PLACEMENT_COLUMNS, p.capacity.shape[1])):
            need = max(need, fewest_hosts_covering(cap_rows[:, r],
                                                   float(p.demand[items, r].sum())))
        if p.confidence is not None and p.cpu_limit is not None and p.usage_mean is not None \
                and p.confidence >= 0.5:
            need = max(need, fewest_hosts_covering(p.cpu_limit[zone_hosts & p.powered],
                                                   float(p.usage_mean[items].sum())))
        fixed = int(np.count_nonzero(busy & ~p.emptiable))
        return max(int(busy.sum()) - max(need, fixed), 0)

    def _volume_bound(self, order: np.ndarray) -> int:
        """The volume bound alone."""
        used = np.cumsum(self.problem.capacity[order] - self.free[order], axis=0)
        room = np.where(self.bins_mask[order, None], self.free[order], 0.0)
        total = self.free[self.bins_mask].sum(axis=0) - np.cumsum(room, axis=0)
        ok = np.all(used <= total + MARGIN, axis=1)
        return int(np.argmin(ok)) if not ok.all() else len(order)

    def probe(self, order: np.ndarray, k: int, tried: list[Strategy]) -> Witness | None:
        """Empty the first k hosts of the order if one heuristic packs their instances."""
        if (order[:k].tobytes(), k) in self.failed:
            return None
        hosts = order[:k]
        rank = np.full(self.problem.n_hosts, -1, dtype=np.int64)
        rank[hosts] = np.arange(k)
        placement = self.problem.placement
        items = np.flatnonzero(rank[placement] >= 0)
        items = items[np.argsort(rank[placement[items]], kind="stable")]
        bin_mask = self.bins_mask & (rank < 0)
        bins = np.flatnonzero(bin_mask)
        bin_index = np.full(self.problem.n_hosts, -1, dtype=np.int64)
        bin_index[bins] = np.arange(len(bins))
        item_pos = {int(item): n for n, item in enumerate(items)} if self.groups else {}
        groups: list[list[int]] = [[] for _ in items] if self.groups else []
        blocked: dict[int, set[int]] = {}
        for g, members in enumerate(self.groups):
            for m in members.tolist():
                if m in item_pos:
                    groups[item_pos[m]].append(g)
                elif bin_index[placement[m]] >= 0:
                    blocked.setdefault(g, set()).add(int(bin_index[placement[m]]))
        inst = VPInstance(free=self.free[bins], demand=self.problem.demand[items],
                          scale=self.scale, groups=[tuple(g) for g in groups],
                          blocked=blocked, window=int(self.problem.options.get("window", 0)))
        found = meta_hvp(inst, tried)
        if found is None:
            if tried is self.tried:
                self.failed.add((order[:k].tobytes(), k))
            return None
        target, strategy = found
        if tried is self.tried and strategy in self.tried:   # the last winner goes first
            self.tried.remove(strategy)
            self.tried.insert(0, strategy)
        return hosts, items, bins[target], strategy.name

    def search(self) -> tuple[Witness | None, int, str]:
        """The best witness, the volume bound and the host order it used."""
        used = "smallest capacity"
        tops = {name: self.volume_bound(candidate) for name, candidate in self.orders.items()}
        best: Witness | None = None
        cheap = [s for s in self.tried if s.algo == "bf"] or self.tried[:1]
        lo = 0
        for name, candidate in self.orders.items():    # smallest capacity, then the others
            for tried in (cheap, self.tried):
                k, found = self.bisect(candidate, lo, tops[name], tried)
                if found is not None:
                    lo, best, used = k, found, name
        if lo:                              # the same number of hosts, fewer migrations?
            for name, candidate in self.orders.items():
                if (self.population[candidate[:lo]].sum() < self.migrations(best)
                        and tops[name] >= lo):
                    found = self.probe(candidate, lo, self.tried)
                    if found is not None:
                        best, used = found, name
        for k in range(lo + 1, max(tops.values()) + 1):     # no order packs beyond its top
            found = None
            for name, candidate in sorted(self.orders.items(),
                                          key=lambda o: self.population[o[1][:k]].sum()):
                if k <= tops[name]:
                    found = self.probe(candidate, k, self.tried)
                    if found is not None:
                        used = name
                        break
            if found is None:
                break
            best = found
        return best, tops["smallest capacity"], used

    def bisect(self, order: np.ndarray, lo: int, top: int,
               tried: list[Strategy]) -> tuple[int, Witness | None]:
        """The largest k in (lo, top] whose hosts of the order pack, found by bisection
        (feasibility taken as monotone in k), with its witness; lo and None if none does."""
        best: Witness | None = None
        hi = top + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = self.probe(order, mid, tried)
            if found is None:
                hi = mid
            else:
                lo, best = mid, found
        return lo, best

    def migrations(self, witness: Witness | None) -> int:
        """How many instances the witness moves."""
        return 0 if witness is None else len(witness[1])


def column_scale(problem: Problem) -> np.ndarray:
    """Per resource, the largest host capacity (1 where there is none)."""
    if not problem.n_hosts:
        return np.ones(problem.capacity.shape[1])
    top = problem.capacity.max(axis=0)
    return np.where(top > 0, top, 1.0)


def apply(state: PackingState, witnesses: list[Witness], ranked: bool) -> bool:
    """Move every instance of the witnesses, through the ranking if ranked; all or nothing."""
    start = state.mark()
    was_open = state.open.copy()
    allowed = np.zeros(state.problem.n_hosts, dtype=bool)
    for hosts, _items, targets, _name in witnesses:
        state.open[hosts] = False
        allowed[targets] = True
    allowed &= state.open
    for _hosts, items, targets, _name in witnesses:
        for item, default in zip(items.tolist(), targets.tolist(), strict=True):
            feasible = state.feasible(item) & allowed
            target = default
            if ranked and feasible.any():
                target = state.choose(item, state.prefer_soft(item, feasible), default)
            if target < 0 or not feasible[target]:
                state.rollback(start)
                state.open[:] = was_open
                return False
            state.move(item, target)
    return True


#: The last packings of hvp, by the identity of their problem's inputs (see _cache_key):
#: -a auto, the front and zoned-bestfit's keep-set order ask for the same LIGHT run.
_RECENT: list[tuple[tuple[Any, ...], Problem, Packing]] = []
#: Packings kept in _RECENT.
RECENT_SIZE = 2


def _cache_key(problem: Problem) -> tuple[Any, ...]:
    """What an hvp run depends on: the arrays (by identity, the problem is held with the
    entry so that no id is reused), the groups, spares, options, ranking and confidence."""
    arrays = (problem.capacity, problem.demand, problem.placement, problem.movable,
              problem.receivers, problem.emptiable, problem.powered, problem.host_zone,
              problem.usage_mean, problem.usage_std, problem.cpu_limit)
    options = tuple(sorted((k, repr(v)) for k, v in problem.options.items()))
    return (tuple(id(a) for a in arrays), tuple(id(g) for g in problem.anti_affinity),
            problem.spare, options, id(problem.ranking), problem.confidence)


def hvp(problem: Problem) -> Packing:
    """Empty the most hosts METAHVP can pack away, the least populated ones first (the
    packing of the same problem's last runs is reused)."""
    key = _cache_key(problem)
    for known, _problem, packing in _RECENT:
        if known == key:
            return packing
    packing = _light_at_the_bound(problem) or _hvp(problem)
    _RECENT.insert(0, (key, problem, packing))
    del _RECENT[RECENT_SIZE:]
    return packing


def _light_at_the_bound(problem: Problem) -> Packing | None:
    """METAHVPLIGHT's packing when it already keeps no more hosts in use than the lower
    bound, so that no heuristic of METAHVP can do better (its failing probes would be all
    that is left to run); None otherwise, and for LIGHT or a restricted set itself."""
    options = problem.options
    if options.get("light") or options.get("strategies"):
        return None
    light = hvp(replace(problem, options={**options, "light": True}))
    population = np.bincount(light.target, minlength=problem.n_hosts)
    busy = int(np.count_nonzero(problem.powered & (population > 0)))
    if busy > host_lower_bound(problem) - problem.spare:
        return None
    return replace(light, notes=(*light.notes, "METAHVP: METAHVPLIGHT reached the lower bound "
                                               "on hosts in use, so no heuristic can do better"))


def light_emptied(problem: Problem) -> tuple[int, ...]:
    """The hosts METAHVPLIGHT empties (no ranking), in the order it empties them."""
    return hvp(replace(problem, options={"light": True}, ranking=None)).emptied


def _hvp(problem: Problem) -> Packing:
    """hvp's run itself."""
    problem = with_chance_column(problem)
    state = PackingState(problem)
    tried = select_strategies(problem.options)
    scale = column_scale(problem)
    label = "METAHVPLIGHT" if problem.options.get("light") else "METAHVP"
    zone_names = {int(problem.host_zone[h]): problem.cluster.hosts[h].availability_zone
                  for h in range(problem.n_hosts)}
    witnesses: list[Witness] = []
    notes: list[str] = []
    for zone in sorted(zone_names):
        witness, bound, used = ZoneSearch(problem, state, zone, tried, scale).search()
        k = 0 if witness is None else len(witness[0])
        how = "" if witness is None else f"; last packed by {witness[3]}, hosts by {used}"
        notes.append(f"{label}, zone {zone_names[zone]}: {plural(k, 'host')} emptied, volume bound "
                     f"{bound}{how}")
        if witness is not None and k:
            witnesses.append(witness)
    if not apply(state, witnesses, problem.ranking is not None):
        notes.append("the ranking's choices did not empty every host; kept the packing's own")
        if not apply(state, witnesses, False):
            raise AssertionError("hvp: a packing witness failed its own feasibility check")
    emptied = [int(h) for w in witnesses for h in w[0]]
    emptied += drain_hosts(state, sorted(zone_names), scale, notes)
    return state.packing(emptied, notes)


def drain_hosts(state: PackingState, zones: list[int], scale: np.ndarray,
                notes: list[str]) -> list[int]:
    """Empty more hosts by repacking the moving instances (drain.py), zone by zone, while
    the hosts in use exceed the lower bound; a note says how many."""
    problem = state.problem
    bound = host_lower_bound(problem) - problem.spare
    emptied: list[int] = []
    for zone in zones:
        in_use = problem.powered & (state.population > 0)
        busy = int(np.count_nonzero(in_use))
        if busy <= bound:
            break
        in_zone = int(np.count_nonzero(in_use & (problem.host_zone == zone)))
        emptied += drain_more(state, zone, scale, stop_at=in_zone - (busy - bound))
    if emptied:
        notes.append(f"the repack of the moving instances emptied "
                     f"{plural(len(emptied), 'more host')}")
    return emptied
