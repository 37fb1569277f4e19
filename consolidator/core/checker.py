"""An independent check of a plan against a cluster, written apart from the algorithms.

It replays the plan wave by wave from the cluster's placement, with its own bookkeeping, and
lists every violation: capacity at any step, server groups, availability zones, instances
that may not move, one move per instance, the per-host limit, and hosts powered off that
would still hold an instance. A plan the planner emits must pass; a failure is a bug.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Protocol

import numpy as np

from consolidator.core.constraints import (
    Rules,
    left_alone_reason,
    pin_reason,
    trait_problem,
    unit_problem,
)
from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Cluster, Host, Instance
from consolidator.core.wording import plural

EPS = 1e-6


class PlanCheckError(ConsolidatorError):
    """A plan violates a constraint: a bug in whatever produced it."""


class MoveLike(Protocol):
    """What the checker needs of a migration (a plan's Move has it)."""

    @property
    def instance_id(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def destination(self) -> str: ...
    @property
    def wave(self) -> int: ...


@dataclass(frozen=True)
class MoveSpec:
    """A bare migration, for checking moves that come from no plan (tests, tools)."""

    instance_id: str
    source: str
    destination: str
    wave: int


Chance = tuple[np.ndarray, np.ndarray, np.ndarray, float]


class MoveMemo:
    """What the checker found about each move (instance, source, destination), the wave
    aside, for one cluster under one Rules object: a front checks dozens of plans that share
    most of their moves, and a move's findings depend on nothing else."""

    def __init__(self, cluster: Cluster, rules: Rules) -> None:
        self.cluster, self.rules = cluster, rules
        self.found: dict[tuple[str, str, str], list[str]] = {}
        #: The planner's moves made so far, by (instance, source, destination, wave) rows:
        #: the plans share them too (they are immutable).
        self.made: dict[tuple[int, int, int, int], MoveLike] = {}

    def serves(self, cluster: Cluster, rules: Rules) -> bool:
        """Whether the memo is this cluster's under these very rules."""
        return self.cluster is cluster and self.rules is rules


def check_plan(cluster: Cluster, moves: Sequence[MoveLike], power_off: Sequence[str], *,
               rules: Rules | None = None, per_host_limit: int | None = None,
               chance: Chance | None = None, memo: MoveMemo | None = None) -> list[str]:
    """Every violation of the plan, as sentences; an empty list means the plan is sound.

    chance = (usage mean, usage std, cpu limit per host, confidence) also checks paper 003's
    chance constraint on every host at the end of the plan (one the plan loads further).
    memo, when it serves this cluster and these rules, remembers each move's own findings.
    """
    rules = rules or Rules()
    known = memo.found if memo is not None and memo.serves(cluster, rules) else {}
    problems: list[str] = []
    hosts = cluster.host_index
    index = cluster.instance_index
    ids = [m.instance_id for m in moves]
    if len(set(ids)) < len(ids):
        problems += [f"instance {i} is moved {n} times" for i, n in Counter(ids).items()
                     if n > 1]
    hard_affinity = {m for g in cluster.server_groups
                     if g.policy == "affinity" and len(g.members) > 1 for m in g.members}
    host_of = dict(cluster.instance_hosts)
    alone: dict[str, str | None] = {}     # host -> left_alone_reason, asked once per host
    for move in moves:
        key = (move.instance_id, move.source, move.destination)
        found = known.get(key)                  # known: the instance is in the cluster
        if found is None:
            row = index.get(move.instance_id)
            if row is None:
                problems.append(f"instance {move.instance_id} is not in the cluster")
                continue
            found = known[key] = _move_problems(cluster, move, cluster.instances[row], rules,
                                                hard_affinity, alone)
        if found:
            problems += found
        if move.wave < 1 and move.destination in cluster.host_index:
            name = cluster.instances[index[move.instance_id]].name
            problems.append(f"{name}: wave {move.wave} is not positive")
    if problems:
        return problems
    capacity = cluster.capacity
    used = cluster.usage.copy()
    initial = cluster.usage  # a host over capacity before the plan may not get fuller
    by_wave: dict[int, list[MoveLike]] = defaultdict(list)
    for m in moves:
        by_wave[m.wave].append(m)
    demand = cluster.demand
    for wave in sorted(by_wave):
        batch = by_wave[wave]
        if per_host_limit:
            for source, count in Counter(m.source for m in batch).items():
                if count > per_host_limit:
                    problems.append(f"wave {wave}: {source} sends {count} at once "
                                    f"(limit {per_host_limit})")
        dests = np.array([hosts[m.destination] for m in batch], dtype=np.int64)
        rows = np.array([index[m.instance_id] for m in batch], dtype=np.int64)
        np.add.at(used, dests, demand[rows])  # held at the destination from the start
        over = np.nonzero(np.any((used > capacity + EPS) & (used > initial + EPS), axis=1))[0]
        problems += [f"wave {wave}: {cluster.hosts[h].name} is over capacity" for h in over]
        problems += _group_problems(cluster, host_of, batch, wave)
        sources = np.array([hosts[m.source] for m in batch], dtype=np.int64)
        np.subtract.at(used, sources, demand[rows])  # released when the migration completes
        for m in batch:
            host_of[m.instance_id] = m.destination
    problems += _final_group_problems(cluster, host_of)
    if chance is not None:
        problems += _chance_problems(cluster, host_of, moves, chance)
    population = Counter(host_of.values())
    for name in power_off:
        if name not in hosts:
            problems.append(f"power-off host {name} is not in the cluster")
        elif population.get(name, 0):
            problems.append(f"power-off host {name} still holds "
                            f"{plural(population[name], 'instance')}")
        elif (why := left_alone_reason(cluster.hosts[hosts[name]], rules)) is not None:
            problems.append(f"power-off host {name} is {why}")
    return problems


def _move_problems(cluster: Cluster, move: MoveLike, inst: Instance, rules: Rules,
                   hard_affinity: set[str], alone: dict[str, str | None]) -> list[str]:
    """A move's own problems (not its wave): the same for every plan of the cluster."""
    out = []
    current = inst.host
    if move.source != current:
        out.append(f"{inst.name}: source {move.source} is not its host {current}")
    if move.destination not in cluster.host_index:
        return out + [f"{inst.name}: destination {move.destination} is not a host"]
    if move.destination == move.source:
        out.append(f"{inst.name}: moves to its own host")
    reason = pin_reason(inst, rules, hard_affinity)
    if reason:
        out.append(f"{inst.name} may not move: {reason}")
    index = cluster.host_index
    src, dst = cluster.hosts[index[move.source]], cluster.hosts[index[move.destination]]
    if src.availability_zone != dst.availability_zone:
        out.append(f"{inst.name}: crosses from zone {src.availability_zone} "
                   f"to {dst.availability_zone}")
    problem = trait_problem(dst, inst)
    for rc in cluster.resource_classes[3:]:
        if problem:
            break
        problem = unit_problem(dst, rc, inst.amount(rc))
    if problem:
        out.append(f"{inst.name}: destination {problem}")
    for host, role, doing in ((dst, "destination", "receive"), (src, "source", "be touched")):
        why = alone[host.name] if host.name in alone else _left_alone(host, rules, alone)
        if not host.usable or why:
            out.append(f"{inst.name}: {role} {host.name} may not {doing}"
                       + (f" ({why})" if why else ""))
    return out


def _left_alone(host: Host, rules: Rules, alone: dict[str, str | None]) -> str | None:
    """left_alone_reason, remembered per host name in `alone`."""
    if host.name not in alone:
        alone[host.name] = left_alone_reason(host, rules)
    return alone[host.name]


def _group_problems(cluster: Cluster, host_of: dict[str, str], batch: Sequence[MoveLike],
                    wave: int) -> list[str]:
    """Anti-affinity while a wave runs: arrivals must not meet another member."""
    out: list[str] = []
    if not any(group.policy == "anti-affinity" for group in cluster.server_groups):
        return out
    arriving = defaultdict(list)
    for m in batch:
        arriving[m.destination].append(m.instance_id)
    for group in cluster.server_groups:
        if group.policy != "anti-affinity":
            continue
        members = set(group.members)
        for dest, ids in arriving.items():
            present = {i for i in members if host_of[i] == dest} | (set(ids) & members)
            if len(present) > 1 and set(ids) & members:
                out.append(f"wave {wave}: anti-affinity group {group.name} meets on {dest}")
    return out


def _chance_problems(cluster: Cluster, host_of: dict[str, str], moves: Sequence[MoveLike],
                     chance: Chance) -> list[str]:
    """Every host whose usage at confidence exceeds its cores at the end of the plan and is
    higher than before it (a host overloaded already that the plan does not load further is
    not the plan's doing)."""
    mean, std, limit, confidence = chance
    z = NormalDist().inv_cdf(confidence)
    hosts, index = cluster.host_index, cluster.instance_index
    rows = np.array([index[i] for i in host_of], dtype=np.int64)
    n = len(cluster.hosts)

    def ucac(where: np.ndarray) -> np.ndarray:
        mu = np.bincount(where, weights=mean[rows], minlength=n)
        var = np.bincount(where, weights=std[rows] ** 2, minlength=n)
        return mu + z * np.sqrt(np.maximum(var, 0.0))

    after = ucac(np.array([hosts[h] for h in host_of.values()], dtype=np.int64))
    before = ucac(cluster.placement[rows]) if len(rows) else np.zeros(n)
    return [f"{h.name} exceeds its cores at confidence {confidence:g}"
            for h, a, b, cap in zip(cluster.hosts, after, before, limit, strict=True)
            if a > cap + EPS and a > b + EPS]


def _final_group_problems(cluster: Cluster, host_of: dict[str, str]) -> list[str]:
    out = []
    for group in cluster.server_groups:
        if not group.members or not group.is_hard:
            continue
        before = {m: cluster.instances[cluster.instance_index[m]].host for m in group.members}
        after = {m: host_of[m] for m in group.members}
        if before == after:
            continue  # untouched groups are not this plan's doing
        hosts = list(after.values())
        if group.policy == "anti-affinity" and len(set(hosts)) < len(hosts):
            out.append(f"anti-affinity group {group.name} shares a host at the end")
        if group.policy == "affinity" and len(set(hosts)) > 1:
            out.append(f"affinity group {group.name} is split at the end")
    return out


def assert_plan_sound(cluster: Cluster, moves: Sequence[MoveLike], power_off: Sequence[str],
                      *, rules: Rules | None = None, per_host_limit: int | None = None,
                      chance: Chance | None = None, memo: MoveMemo | None = None) -> None:
    """Raise PlanCheckError naming every violation."""
    problems = check_plan(cluster, moves, power_off, rules=rules, per_host_limit=per_host_limit,
                          chance=chance, memo=memo)
    if problems:
        raise PlanCheckError("the plan failed its check (a bug, please report it): "
                             + "; ".join(problems[:5])
                             + (f"; and {len(problems) - 5} more" if len(problems) > 5 else ""))
