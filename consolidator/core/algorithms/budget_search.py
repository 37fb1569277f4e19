"""Budget-aware search: which hosts to empty when migrations (or GiB moved) are limited.

Emptying a host costs its instances' migrations (and their memory moved) and takes its
capacity out of the room the others have; it frees one host. So the hosts to empty are a
knapsack with unit values and several weights: their share of the budget, and their share
of the spare capacity (the cluster's capacity less its demand) on each column. For a
Lagrangian family of trade-offs lambda between the two, hosts are ordered by

    weight(h) = budget share(h) + lambda x max over columns of capacity share(h)

(lambda 0: the least populated first; large lambda: the smallest first), and for each order
the longest prefix within the budget that METAHVPLIGHT's Best Fit packs into the hosts kept
(their residual room, every resource column, groups and zones; under ucac the chance column)
is found by binary search (an order is dropped after one probe when it cannot come within one
host of the best so far); the orders within one host of the best are then extended with the
whole METAHVPLIGHT set. A local search then tries to empty one more host: add a host outside
the set when the budget allows, else swap the costliest host of the set for two cheaper ones
(with the whole LIGHT set on up to SMALL_POOL hosts, Best Fit beyond).

Every emptied host moves exactly its own instances, so a set's migrations and GiB are the
sums of its hosts' own: the budget is met exactly and spent where it frees the most hosts.
With a target number of hosts, the search instead looks for the cheapest set of the size the
target needs. Deterministic: fixed lambdas, fixed number of local tries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from consolidator.core.algorithms.base import Packing, Problem
from consolidator.core.algorithms.chance import with_chance_column
from consolidator.core.algorithms.hvp import (
    Witness,
    ZoneSearch,
    apply,
    column_scale,
    select_strategies,
)
from consolidator.core.algorithms.state import EPS, PackingState
from consolidator.core.wording import plural

#: Trade-offs between the budget share and the capacity share of a host.
LAMBDAS = (0.0, 0.05, 0.15, 0.3, 0.6, 1.0, 2.0, 4.0, 10.0, 1e6)
#: Probes the local search may spend.
LOCAL_TRIES = 24
#: Up to this many hosts to choose from, the local search probes with the whole LIGHT set.
SMALL_POOL = 500


@dataclass(frozen=True)
class Limits:
    """The budget: None is no limit."""

    max_migrations: int | None = None
    max_moved_mib: float | None = None
    target_hosts: int | None = None


@dataclass
class Found:
    """A set of hosts that packs: the hosts and their witnesses."""

    hosts: list[int]
    witnesses: list[Witness]
    migrations: int
    mib: float


class KeepSetSearch:
    """The search over sets of hosts to empty for one problem and budget."""

    def __init__(self, problem: Problem, limits: Limits, memo: bool = False) -> None:
        self.problem = with_chance_column(problem)
        self.limits = limits
        p = self.problem
        self.population = np.bincount(p.placement, minlength=p.n_hosts)
        mib = p.demand[:, 1] if p.demand.shape[1] > 1 else np.zeros(p.n_instances)
        self.mib = np.bincount(p.placement, weights=mib, minlength=p.n_hosts) \
            if p.n_instances else np.zeros(p.n_hosts)
        self.pool = np.flatnonzero(p.emptiable & p.powered & (self.population > 0))
        self.state = PackingState(self.problem)
        self.scale = column_scale(self.problem)
        # The orders are compared with Best Fit alone (cheap); the best one is then extended
        # with the whole METAHVPLIGHT set, whose Permutation Pack costs ten times as much.
        self.full = select_strategies({"light": True})
        self.cheap = [s for s in self.full if s.algo == "bf"]
        self.tried = self.cheap
        self.zone_searches: dict[int, ZoneSearch] = {}
        #: With memo, (hosts in order, whole LIGHT set) -> what the probe found: a search
        #: reused for several budgets (the front's, through with_limits) probes a set once.
        self.probes: dict[tuple[bytes, bool], Found | None] | None = {} if memo else None

    def with_limits(self, limits: Limits) -> KeepSetSearch:
        """This search for another budget, sharing its probes and zone searches."""
        self.limits = limits
        return self

    def budget_share(self) -> np.ndarray:
        """(H,) each host's share of the budget (its population if there is none)."""
        lim = self.limits
        share = np.zeros(self.problem.n_hosts)
        if lim.max_migrations is not None:
            share = np.maximum(share, self.population / max(lim.max_migrations, 1))
        if lim.max_moved_mib is not None:
            share = np.maximum(share, self.mib / max(lim.max_moved_mib, 1.0))
        if lim.max_migrations is None and lim.max_moved_mib is None:
            share = self.population / max(float(self.population.sum()), 1.0)
        return share

    def capacity_share(self) -> np.ndarray:
        """(H,) the largest share, over the columns, of the cluster's spare room a host
        takes away when emptied."""
        p = self.problem
        on = p.powered & p.receivers
        spare = p.capacity[on].sum(axis=0) - p.demand.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(spare > EPS, p.capacity / np.maximum(spare, EPS), 0.0)
        result: np.ndarray = share.max(axis=1)
        return result

    def affordable(self, order: np.ndarray) -> int:
        """How many hosts of the order, as a prefix, the budget pays for."""
        count = len(order)
        for limit, costs in ((self.limits.max_migrations, self.population),
                             (self.limits.max_moved_mib, self.mib)):
            if limit is not None:
                count = min(count, int(np.searchsorted(np.cumsum(costs[order]), limit + 1e-6,
                                                       side="right")))
        return count

    def within(self, hosts: list[int]) -> bool:
        """The set is within the migration and memory budgets."""
        lim = self.limits
        return ((lim.max_migrations is None
                 or int(self.population[hosts].sum()) <= lim.max_migrations)
                and (lim.max_moved_mib is None
                     or float(self.mib[hosts].sum()) <= lim.max_moved_mib + 1e-6))

    def probe(self, hosts: list[int]) -> Found | None:
        """Witnesses that empty every host of the set into the others, or None."""
        rows = np.asarray(hosts, dtype=np.int64)
        if self.probes is None:
            return self._probe(rows)
        key = (rows.tobytes(), self.tried is self.full)
        if key not in self.probes:
            self.probes[key] = self._probe(rows)
        return self.probes[key]

    def _probe(self, rows: np.ndarray) -> Found | None:
        """probe, without the memo."""
        p = self.problem
        hosts = rows.tolist()
        witnesses = []
        for zone in np.unique(p.host_zone[rows]).tolist():
            search = self.zone_searches.get(zone)
            if search is None:
                search = ZoneSearch(p, self.state, zone, self.tried, self.scale)
                self.zone_searches[zone] = search
            order = rows[p.host_zone[rows] == zone]
            found = search.probe(order, len(order), self.tried)
            if found is None:
                return None
            witnesses.append(found)
        return Found(list(hosts), witnesses, int(self.population[rows].sum()),
                     float(self.mib[rows].sum()))

    def longest_prefix(self, order: np.ndarray, top: int, beat: int = 0) -> Found | None:
        """The longest prefix of order, at most top hosts, that packs (binary search); None
        at once when the prefix one longer than `beat` does not pack."""
        if beat >= top:
            return None
        lo, hi, best = beat, top + 1, None
        if beat:
            best = self.probe(order[:beat + 1].tolist())
            if best is None:
                return None
            lo = beat + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = self.probe(order[:mid].tolist())
            if found is None:
                hi = mid
            else:
                lo, best = mid, found
        return best

    def orders(self) -> list[np.ndarray]:
        """The pool in the order of each lambda (ties: fewer instances, then host row)."""
        cost, size = self.budget_share(), self.capacity_share()
        out, seen = [], set()
        for lam in LAMBDAS:
            weight = cost[self.pool] + lam * size[self.pool]
            order = self.pool[np.lexsort((self.pool, self.population[self.pool], weight))]
            key = order.tobytes()
            if key not in seen:
                seen.add(key)
                out.append(order)
        return out

    def most_hosts(self, beyond: int = 0) -> Found | None:
        """The most hosts emptied within the budget, fewest migrations among equals; with
        `beyond`, only a set of more hosts than that (known to be reached otherwise) counts,
        so an order that cannot beat it is dropped after one probe."""
        best: Found | None = None
        orders = self.orders()
        reached: list[tuple[int, np.ndarray]] = []
        for order in orders:
            found = self.longest_prefix(order, self.affordable(order),
                                        len(best.hosts) - 1 if best is not None else beyond)
            if found is not None:
                reached.append((len(found.hosts), order))
                if better(found, best):
                    best = found
        if best is None:
            return None
        self.tried = self.full          # the orders within one host of the best, extended
        for k, order in reached:
            if k >= len(best.hosts) - 1:
                found = self.longest_prefix(order, self.affordable(order), len(best.hosts))
                if found is not None and better(found, best):
                    best = found
        if len(self.pool) > SMALL_POOL:
            self.tried = self.cheap
        found = self.improve(best, orders)
        self.tried = self.cheap
        return found

    def improve(self, best: Found, orders: list[np.ndarray]) -> Found:
        """Local search: one more host, by adding one or swapping one for two."""
        tries = LOCAL_TRIES
        improved = True
        while improved and tries > 0:
            improved = False
            inside = set(best.hosts)
            outside = [h for h in orders[0].tolist() if h not in inside]
            moves: list[list[int]] = [best.hosts + [h] for h in outside[:8]]
            for costly in sorted(best.hosts, key=lambda h: -self.population[h])[:3]:
                rest = [h for h in best.hosts if h != costly]
                cheap = [h for h in outside if self.population[h] <= self.population[costly]]
                moves += [rest + [a, b] for a, b in zip(cheap[:4], cheap[1:5], strict=False)]
            for hosts in moves:
                if tries <= 0:
                    break
                if not self.within(hosts):
                    continue
                tries -= 1
                found = self.probe(hosts)
                if found is not None and better(found, best):
                    best, improved = found, True
                    break
        return best

    def cheapest_of_size(self, size: int) -> Found | None:
        """The set of `size` hosts with the fewest migrations that packs, over the orders."""
        best: Found | None = None
        for order in self.orders():
            if len(order) < size:
                continue
            found = self.probe(order[:size].tolist())
            if found is not None and (best is None or found.migrations < best.migrations):
                best = found
        return best

    def packing(self, found: Found, note: str) -> Packing | None:
        """The found set applied (through the ranking when there is one)."""
        state = PackingState(self.problem)
        if not apply(state, found.witnesses, self.problem.ranking is not None) \
                and not apply(state, found.witnesses, False):
            return None
        return state.packing(sorted(found.hosts, key=lambda h: self.population[h]), [note])


def better(a: Found, b: Found | None) -> bool:
    """More hosts, then fewer migrations, then less memory moved."""
    return b is None or (len(a.hosts), -a.migrations, -a.mib) > \
        (len(b.hosts), -b.migrations, -b.mib)


def budget_packing(problem: Problem, limits: Limits) -> Packing | None:
    """The budget-aware search's packing: with a target, the cheapest set of hosts that
    reaches it (else the most hosts); otherwise the most hosts within the budget."""
    search = KeepSetSearch(problem, limits)
    found = None
    if limits.target_hosts is not None:
        need = int(problem.powered.sum()) - limits.target_hosts + problem.spare
        for size in range(max(need, 1), len(search.pool) + 1):
            found = search.cheapest_of_size(size)
            if found is not None and search.within(found.hosts):
                break
            found = None
    if found is None:
        found = search.most_hosts()
    if found is None or not found.hosts:
        return None
    return search.packing(found, f"budget search: {plural(len(found.hosts), 'host')} emptied, "
                                 f"chosen by capacity and population within the budget "
                                 f"({plural(found.migrations, 'migration')})")
