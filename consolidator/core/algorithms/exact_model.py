"""The final placement as an OR-Tools CP-SAT model (the optional extra ``exact``).

What is modelled (docs/algorithms.rst, "exact: OR-Tools CP-SAT"):

- every resource column of the Problem: each Placement class, the compatibility columns that
  make traits and inventory units capacity, and under capacity model ucac the linear column
  that implies the chance constraint (chance.py); capacities are whole units, demands that
  are not whole are scaled and rounded up, capacities rounded down (never optimistic);
- instances with the same demand and zone and no hard group are interchangeable: an integer
  x[class, host] counts them; those that stay are min(x, the count there now);
- members of hard anti-affinity groups have one Boolean per host; at most one member of a
  group per host;
- pinned instances (not movable) are fixed load; their hosts stay in use;
- availability zones (an instance stays in its own), hosts that may not receive, hosts
  already over capacity (they keep what they have and receive nothing), powered-off hosts
  (they receive nothing);
- budgets: at most M migrations, at most G GiB of memory moved, and a target on hosts;
- whole hosts (as every plan of the product): a host keeps all its instances or ends empty;
  without it (``whole_hosts=False``) the model is the looser one (docs/algorithms.rst),
  whose optimum is a lower bound for the product's plans.

Objective: first the fewest hosts in use, then (with the time left) the fewest migrations
for that many hosts. Soft policies and rankings are not modelled.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from consolidator.core.algorithms.base import Problem
from consolidator.core.algorithms.budget_search import Limits
from consolidator.core.algorithms.state import EPS
from consolidator.core.errors import UsageError

#: Non-integer columns are scaled by this before rounding.
FRACTION_SCALE = 1000


def load_cp_model() -> Any:
    """The ortools.sat.python.cp_model module, or a UsageError saying how to install it."""
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:
        raise UsageError("algorithm exact needs OR-Tools: pip install 'consolidator[exact]' "
                         "(or pip install ortools)") from exc
    return cp_model


def integer_columns(capacity: np.ndarray, demand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Capacity rounded down and demand rounded up to whole units, per column (columns whose
    demands are not whole are scaled by FRACTION_SCALE first)."""
    cap = np.array(capacity, dtype=np.float64)
    dem = np.array(demand, dtype=np.float64)
    for r in range(dem.shape[1]):
        if not np.allclose(dem[:, r], np.round(dem[:, r])):
            cap[:, r] *= FRACTION_SCALE
            dem[:, r] *= FRACTION_SCALE
    cap = np.floor(np.clip(cap, -1e15, 1e15) + EPS)
    dem = np.ceil(dem - EPS)
    return cap.astype(np.int64), dem.astype(np.int64)


@dataclass
class Classes:
    """Interchangeable instances: class per movable, ungrouped instance; singles otherwise."""

    members: list[list[int]] = field(default_factory=list)      # class -> instance rows
    single: list[int] = field(default_factory=list)             # grouped movable instances
    fixed: list[int] = field(default_factory=list)              # not movable


def classify(problem: Problem) -> Classes:
    """Group the instances into classes of the same zone and demand."""
    grouped = np.zeros(problem.n_instances, dtype=bool)
    for rows in problem.anti_affinity:
        if len(rows) > 1:
            grouped[rows] = True
    out = Classes()
    index: dict[tuple[int, bytes], int] = {}
    zone = problem.host_zone[problem.placement] if problem.n_instances else np.zeros(0)
    for i in range(problem.n_instances):
        if not problem.movable[i]:
            out.fixed.append(i)
        elif grouped[i]:
            out.single.append(i)
        else:
            key = (int(zone[i]), problem.demand[i].tobytes())
            if key not in index:
                index[key] = len(out.members)
                out.members.append([])
            out.members[index[key]].append(i)
    return out


class PlacementModel:
    """The CP-SAT model of one problem, its variables, and how to read a solution back."""

    def __init__(self, problem: Problem, budgets: Limits, whole_hosts: bool = True) -> None:
        cp_model = load_cp_model()
        self.problem, self.budgets = problem, budgets
        self.model = cp_model.CpModel()
        self.cp_model = cp_model
        self.classes = classify(problem)
        capacity, demand = integer_columns(problem.capacity, problem.demand)
        self.capacity, self.demand = capacity, demand
        n_hosts = problem.n_hosts
        used_now = np.zeros_like(capacity)
        if problem.n_instances:
            np.add.at(used_now, problem.placement, demand)
        fixed_load = np.zeros_like(capacity)
        if self.classes.fixed:
            np.add.at(fixed_load, problem.placement[self.classes.fixed],
                      demand[self.classes.fixed])
        over = np.any(used_now > capacity, axis=1)
        self.receiving = problem.receivers & problem.powered & ~over
        zone_of_host = problem.host_zone
        pinned_hosts = set(problem.placement[self.classes.fixed].tolist())
        self.used = [self.model.NewBoolVar(f"used{h}") for h in range(n_hosts)]
        for h in pinned_hosts:
            self.model.Add(self.used[h] == 1)
        self.origin: list[dict[int, int]] = []
        self.x: list[dict[int, Any]] = []
        self.stay_terms: list[Any] = []
        own: dict[int, list[Any]] = defaultdict(list)       # host -> its instances' stays
        own_count: dict[int, int] = defaultdict(int)
        self.moved_memory_terms: list[Any] = []
        memory = problem.demand[:, 1] if problem.demand.shape[1] > 1 else \
            np.zeros(problem.n_instances)
        loads: list[list[tuple[Any, np.ndarray]]] = [[] for _ in range(n_hosts)]
        for c, rows in enumerate(self.classes.members):
            count: dict[int, int] = defaultdict(int)
            for i in rows:
                count[int(problem.placement[i])] += 1
            self.origin.append(dict(count))
            zone = int(zone_of_host[problem.placement[rows[0]]])
            hosts = [h for h in range(n_hosts) if zone_of_host[h] == zone
                     and (self.receiving[h] or h in count)]
            xs: dict[int, Any] = {}
            for h in hosts:
                top = len(rows) if self.receiving[h] else count[h]
                var = self.model.NewIntVar(0, top, f"x{c}_{h}")
                self.model.Add(var <= top * self.used[h])
                xs[h] = var
                loads[h].append((var, demand[rows[0]]))
            self.model.Add(sum(xs.values()) == len(rows))
            self.x.append(xs)
            mem = int(round(float(memory[rows[0]])))
            for h, n in count.items():
                stay = self.model.NewIntVar(0, n, f"s{c}_{h}")
                self.model.AddMinEquality(stay, [xs[h], n])
                self.stay_terms.append(stay)
                own[h].append(stay)
                own_count[h] += n
                self.moved_memory_terms.append(mem * (n - stay))
        self.b: dict[int, dict[int, Any]] = {}
        for i in self.classes.single:
            here = int(problem.placement[i])
            zone = int(zone_of_host[here])
            hosts = [h for h in range(n_hosts) if zone_of_host[h] == zone
                     and (self.receiving[h] or h == here)]
            bs = {h: self.model.NewBoolVar(f"b{i}_{h}") for h in hosts}
            for h, var in bs.items():
                self.model.AddImplication(var, self.used[h])
                loads[h].append((var, demand[i]))
            self.model.AddExactlyOne(bs.values())
            self.b[i] = bs
            self.stay_terms.append(bs[here])
            own[here].append(bs[here])
            own_count[here] += 1
            self.moved_memory_terms.append(int(round(float(memory[i]))) * (1 - bs[here]))
        for group in problem.anti_affinity:
            members = [int(m) for m in group.tolist() if int(m) in self.b]
            if not members or len(group) < 2:    # a pinned member counts as much as a moving one
                continue
            for h in range(n_hosts):
                on = [self.b[m][h] for m in members if h in self.b[m]]
                fixed_members = sum(1 for m in group.tolist()
                                    if int(m) not in self.b and problem.placement[m] == h)
                if len(on) + fixed_members > 1:
                    self.model.Add(sum(on) <= 1 - min(fixed_members, 1))
        for h in range(n_hosts):
            if not loads[h]:
                continue
            room = capacity[h] - fixed_load[h]
            if over[h]:
                continue                # receives nothing: it only loses load
            for r in range(capacity.shape[1]):
                terms = [int(d[r]) * var for var, d in loads[h] if d[r]]
                if terms:
                    self.model.Add(sum(terms) <= int(max(room[r], 0)) * self.used[h]
                                   if h not in pinned_hosts else sum(terms) <= int(room[r]))
        if whole_hosts:             # a host keeps all its instances or is emptied
            for h, stays in own.items():
                self.model.Add(sum(stays) == own_count[h] * self.used[h])
        self.movable_total = sum(len(rows) for rows in self.classes.members) + \
            len(self.classes.single)
        self.migrations = self.movable_total - sum(self.stay_terms)
        self.hosts = sum(self.used[h] for h in range(n_hosts) if problem.powered[h])
        if budgets.max_migrations is not None:
            self.model.Add(self.migrations <= budgets.max_migrations)
        if budgets.max_moved_mib is not None:
            self.model.Add(sum(self.moved_memory_terms) <= int(budgets.max_moved_mib + 1e-6))

    def hint(self, target: np.ndarray) -> None:
        """Seed the search with a placement (a heuristic's plan)."""
        count: dict[tuple[int, int], int] = defaultdict(int)
        for c, rows in enumerate(self.classes.members):
            for i in rows:
                count[(c, int(target[i]))] += 1
        for c, xs in enumerate(self.x):
            for h, var in xs.items():
                self.model.AddHint(var, count.get((c, h), 0))
        for i, bs in self.b.items():
            for h, var in bs.items():
                self.model.AddHint(var, int(target[i] == h))
        busy = set(target.tolist())
        for h, var in enumerate(self.used):
            self.model.AddHint(var, int(h in busy))

    def read(self, solver: Any) -> np.ndarray:
        """The target host of every instance in the solver's solution: those that may stay
        on their host stay, the others fill the hosts their class gained."""
        p = self.problem
        target = p.placement.copy()
        for c, rows in enumerate(self.classes.members):
            want = {h: int(solver.Value(var)) for h, var in self.x[c].items()}
            moving = []
            for i in rows:
                h = int(p.placement[i])
                if want.get(h, 0) > 0:
                    want[h] -= 1
                else:
                    moving.append(i)
            slots = [h for h, n in sorted(want.items()) for _ in range(n)]
            for i, h in zip(moving, slots, strict=True):
                target[i] = h
        for i, bs in self.b.items():
            target[i] = next(h for h, var in bs.items() if solver.Value(var))
        result: np.ndarray = target
        return result
