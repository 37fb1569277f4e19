"""Incremental bookkeeping for packing: free capacity, populations, group occupancy, undo.

Every update is O(R) (plus the groups of the moved instance); a feasibility query is one
vectorised pass over the hosts. Moves are logged so that a whole host's moves can be tried
and rolled back together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from statistics import NormalDist
from typing import Any

import numpy as np

from consolidator.core.algorithms.base import Packing, Problem

#: Tolerance for float capacity comparisons.
EPS = 1e-6
#: pick(item, feasible_mask) -> host row, or -1 for none.
PickFunc = Callable[[int, np.ndarray], int]


class PackingState:
    """The mutable placement of a Problem's instances while an algorithm packs them."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.capacity = problem.capacity
        self.demand = problem.demand
        self.host_of = problem.placement.copy()
        used = np.zeros_like(problem.capacity)
        if problem.n_instances:
            np.add.at(used, self.host_of, problem.demand)
        # Column-major, so that a per-resource comparison over all hosts is contiguous.
        self.free = np.asfortranarray(problem.capacity - used)
        self.population = np.bincount(self.host_of, minlength=problem.n_hosts).astype(np.int64)
        self.open = problem.receivers.copy()
        self.instance_zone = problem.host_zone[problem.placement] if problem.n_instances \
            else np.zeros(0, dtype=np.int64)
        self._zone_masks: dict[int, np.ndarray] = {}
        self.members: list[set[int]] = [set() for _ in range(problem.n_hosts)]
        for item, host in enumerate(self.host_of.tolist()):
            self.members[host].add(item)
        self._groups_of: dict[int, list[int]] = defaultdict(list)
        self._group_hosts: list[dict[int, int]] = []
        for g, rows in enumerate(problem.anti_affinity):
            counts: dict[int, int] = defaultdict(int)
            for item in rows.tolist():
                self._groups_of[item].append(g)
                counts[int(self.host_of[item])] += 1
            self._group_hosts.append(counts)
        self._soft = _soft_index(problem)
        self._log: list[tuple[int, int, int]] = []
        self._init_usage(problem)

    def _init_usage(self, problem: Problem) -> None:
        """Per-host sums of usage means and variances, and the chance constraint if any."""
        n = problem.n_hosts
        mean = problem.usage_mean if problem.usage_mean is not None \
            else problem.demand[:, 0].astype(np.float64)
        std = problem.usage_std if problem.usage_std is not None else np.zeros_like(mean)
        self.usage_mean, self.usage_var_item = mean, std ** 2
        self.usage_mu = np.bincount(self.host_of, weights=mean, minlength=n)
        self.usage_var = np.bincount(self.host_of, weights=self.usage_var_item, minlength=n)
        self.confidence = problem.confidence
        self.cpu_limit = problem.cpu_limit
        self._z = NormalDist().inv_cdf(problem.confidence) if problem.confidence else 0.0

    def chance_ok(self, item: int, stop: int | None = None) -> np.ndarray:
        """(stop,) hosts whose UCaC stays within cpu_limit with the item added (003, eq. 5)."""
        mu = self.usage_mu[:stop] + self.usage_mean[item]
        var = self.usage_var[:stop] + self.usage_var_item[item]
        assert self.cpu_limit is not None, "chance_ok is asked only under a CPU limit"
        result: np.ndarray = mu + self._z * np.sqrt(var) <= self.cpu_limit[:stop] + EPS
        return result

    # -- queries ---------------------------------------------------------------------

    def zone_mask(self, item: int) -> np.ndarray:
        """Hosts in the instance's availability zone."""
        zone = int(self.instance_zone[item])
        mask = self._zone_masks.get(zone)
        if mask is None:
            mask = self.problem.host_zone == zone
            self._zone_masks[zone] = mask
        return mask

    def fits(self, item: int, stop: int | None = None) -> np.ndarray:
        """(stop,) hosts among the first `stop` (default all) with room on every resource."""
        need = (self.demand[item] - EPS).tolist()
        free = self.free[:stop]
        mask = free[:, 0] >= need[0]
        for r in range(1, len(need)):
            if need[r] > 0:
                mask &= free[:, r] >= need[r]
        if self.cpu_limit is not None:
            mask &= self.chance_ok(item, stop)
        result: np.ndarray = mask
        return result

    def feasible(self, item: int, stop: int | None = None) -> np.ndarray:
        """(H,) hosts the instance may move to now: open, same zone, room, hard groups.

        With stop, only the first `stop` hosts are considered (the rest are False).
        """
        n = self.problem.n_hosts if stop is None else min(stop, self.problem.n_hosts)
        mask = np.zeros(self.problem.n_hosts, dtype=bool)
        mask[:n] = self.fits(item, n) & self.open[:n] & self.zone_mask(item)[:n]
        mask[self.host_of[item]] = False
        for g in self._groups_of.get(item, ()):
            for host, count in self._group_hosts[g].items():
                if count:
                    mask[host] = False
        return mask

    def fits_on(self, item: int, host: int) -> bool:
        """feasible(item)[host], for one host in O(R): open, same zone, room on every column
        and for the chance constraint, no member of a hard group there."""
        if host == int(self.host_of[item]) or not self.open[host] or \
                self.problem.host_zone[host] != self.instance_zone[item]:
            return False
        if np.any(self.free[host] < self.demand[item] - EPS):
            return False
        if self.cpu_limit is not None:
            mu = self.usage_mu[host] + self.usage_mean[item]
            var = max(float(self.usage_var[host] + self.usage_var_item[item]), 0.0)
            if mu + self._z * np.sqrt(var) > self.cpu_limit[host] + EPS:
                return False
        return not any(self._group_hosts[g].get(host, 0) for g in self._groups_of.get(item, ()))

    def soft_ok(self, item: int) -> np.ndarray | None:
        """(H,) hosts that honour the instance's soft policies, or None if it has none."""
        prefs = self._soft.get(item)
        if not prefs:
            return None
        mask = np.ones(self.problem.n_hosts, dtype=bool)
        for rows, affinity in prefs:
            hosts = np.unique(self.host_of[rows[rows != item]])
            if affinity and hosts.size:
                keep = np.zeros_like(mask)
                keep[hosts] = True
                mask &= keep
            elif not affinity:
                mask[hosts] = False
        return mask

    def prefer_soft(self, item: int, feasible: np.ndarray) -> np.ndarray:
        """The feasible hosts that honour soft policies, if any does; else all feasible."""
        soft = self.soft_ok(item)
        if soft is None:
            return feasible
        preferred = feasible & soft
        return preferred if preferred.any() else feasible

    def items_on(self, host: int) -> list[int]:
        """The instances on a host now, in a stable order."""
        return sorted(self.members[host])

    # -- updates ---------------------------------------------------------------------

    def move(self, item: int, host: int) -> None:
        """Move an instance to a host (no checks: ask feasible() first)."""
        source = int(self.host_of[item])
        if source == host:
            return
        self._apply(item, source, host)
        self._log.append((item, source, host))

    def _apply(self, item: int, source: int, host: int) -> None:
        d = self.demand[item]
        self.free[source] += d
        self.free[host] -= d
        self.population[source] -= 1
        self.population[host] += 1
        self.members[source].discard(item)
        self.members[host].add(item)
        self.host_of[item] = host
        mean, var = self.usage_mean[item], self.usage_var_item[item]
        self.usage_mu[source] -= mean
        self.usage_mu[host] += mean
        # Sums of floats taken off in another order than they were added can end a hair
        # below zero, where sqrt is NaN and the host would count as full: clamp at zero.
        self.usage_var[source] = max(float(self.usage_var[source]) - var, 0.0)
        self.usage_var[host] += var
        for g in self._groups_of.get(item, ()):
            counts = self._group_hosts[g]
            counts[source] -= 1
            counts[host] += 1

    def mark(self) -> int:
        """A point to roll back to."""
        return len(self._log)

    def rollback(self, mark: int) -> None:
        """Undo every move made since mark."""
        while len(self._log) > mark:
            item, source, host = self._log.pop()
            self._apply(item, host, source)

    def close(self, host: int) -> None:
        """The host receives nothing from now on (being emptied, or emptied)."""
        self.open[host] = False

    def choose(self, item: int, feasible: np.ndarray, default: int) -> int:
        """The ranking's choice among feasible hosts, or the algorithm's own default."""
        ranking = self.problem.ranking
        if ranking is None or default < 0:
            return default
        return ranking.choose(self, item, feasible)

    def try_empty(self, host: int, pick: PickFunc, stop: int | None = None,
                  order: Callable[[int], Any] | None = None,
                  allowed: np.ndarray | None = None,
                  first: Callable[[int], int] | None = None) -> bool:
        """Move every instance off a host, choosing targets with pick; all or nothing.

        With stop, only the first `stop` hosts are offered as targets; with allowed (an (H,)
        bool mask), only those hosts. The instances go in the order of the key `order`
        (default: the largest single demand first). first(item), when given, names a host
        to take at once when it is feasible (-1: none), without offering the others.
        """
        items = self.items_on(host)
        if not items or not self.problem.emptiable[host]:
            return bool(not items and self.problem.emptiable[host])
        was_open = bool(self.open[host])
        self.close(host)
        start = self.mark()
        for item in sorted(items, key=order or (lambda i: -float(self.demand[i].max()))):
            quick = first(item) if first is not None else -1
            if quick >= 0 and (stop is None or quick < stop) and \
                    (allowed is None or allowed[quick]) and self.fits_on(item, quick):
                self.move(item, quick)
                continue
            feasible = self.feasible(item, stop)
            if allowed is not None:
                feasible &= allowed
            feasible = self.prefer_soft(item, feasible)
            target = pick(item, feasible) if feasible.any() else -1
            if target < 0:
                self.rollback(start)
                self.open[host] = was_open
                return False
            self.move(item, target)
        return True

    def packing(self, emptied: list[int], notes: list[str] | None = None) -> Packing:
        """The result: final hosts and the hosts emptied."""
        return Packing(target=self.host_of.copy(), emptied=tuple(emptied),
                       notes=tuple(notes or ()))


def _soft_index(problem: Problem) -> dict[int, list[tuple[np.ndarray, bool]]]:
    index: dict[int, list[tuple[np.ndarray, bool]]] = defaultdict(list)
    for rows in problem.soft_affinity:
        for item in rows.tolist():
            index[item].append((rows, True))
    for rows in problem.soft_anti_affinity:
        for item in rows.tolist():
            index[item].append((rows, False))
    return index
