"""The planner: Cluster + algorithm (+ ranking) -> a checked Plan.

One move per instance (A->B->C collapses to A->C and A->B->A to nothing, because only the
final placement is kept), waves that never overload a host or overrun the per-host limit,
spare hosts kept powered as padding, both lower bounds, and the independent checker.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np

from consolidator.core.algorithms.base import Packing, Problem, Ranker
from consolidator.core.algorithms.bounds import host_lower_bound, migration_lower_bound
from consolidator.core.algorithms.catalog import get_algorithm
from consolidator.core.checker import MoveMemo, assert_plan_sound
from consolidator.core.constraints import Rules, UsageModel, build_problem
from consolidator.core.errors import ConsolidatorError
from consolidator.core.fit import too_large
from consolidator.core.kept_hosts import keep_home
from consolidator.core.model import Cluster
from consolidator.core.plan import DEFAULT_IDLE_WATTS, Move, PlanDraft
from consolidator.core.wording import agree, plural


class PlanError(ConsolidatorError):
    """A plan cannot be made (for example no safe order of migrations exists)."""


@dataclass(frozen=True)
class PlanSettings:
    """How plans are made: the rules plus the planner's own limits."""

    rules: Rules = field(default_factory=Rules)
    per_host_limit: int = 2
    idle_watts: float = DEFAULT_IDLE_WATTS
    usage: UsageModel = field(default_factory=UsageModel)
    #: Keep enough hosts on to absorb the failure of the most loaded one.
    n_plus_one: bool = True
    #: No BMC file: the plan migrates and powers nothing off (emptied hosts are left on).
    migrate_only: bool = False

#: Why a migrate-only plan leaves its emptied hosts on.
MIGRATE_ONLY = "emptied, left on: migrate-only plan (no BMC file)"
#: Why a plan leaves an emptied host without a BMC entry on.
NO_BMC = "emptied, left on: no BMC is configured for it in the BMC file"


def plan_cluster(cluster: Cluster, algorithm: str, *, settings: PlanSettings | None = None,
              spare: int = 0, options: Mapping[str, Any] | None = None,
              ranking: Ranker | None = None,
              no_bmc: Collection[str] | Mapping[str, str] = ()) -> PlanDraft:
    """Run an algorithm on a cluster and turn its packing into a checked plan."""
    settings = settings or PlanSettings()
    algo = get_algorithm(algorithm)
    problem = build_problem(cluster, settings.rules, spare=spare, options=options,
                            ranking=ranking, usage=settings.usage)
    packing = algo.run(problem)
    return draft_from_packing(problem, packing, algorithm=algo.name,
                              ranking=ranking.name if ranking else None, settings=settings,
                              no_bmc=no_bmc)


def draft_from_packing(problem: Problem, packing: Packing, *, algorithm: str,
                       ranking: str | None, settings: PlanSettings,
                       no_bmc: Collection[str] | Mapping[str, str] = (),
                       memo: MoveMemo | None = None) -> PlanDraft:
    """Moves, waves, spares, power-off and bounds of a packing; checked before returned.
    Emptied hosts in no_bmc (see stay_on_reasons) are left on, with the reason; memo: the
    checker's (checker.MoveMemo), shared by plans of the same cluster."""
    cluster = problem.cluster
    target = packing.target
    names = [h.name for h in cluster.hosts]
    notes = too_large(cluster) + list(problem.notes) + list(packing.notes)
    def decide(p: Problem, t: np.ndarray) -> PowerDecisions:
        return power_decisions(p, t, settings, no_bmc)

    first = decide(problem, target)
    settled, decided, restored = keep_home(problem, target, decide, first)
    try:
        waves = plan_waves(cluster, _triples(problem.placement, settled),
                           settings.per_host_limit)
        target = settled
        if restored:   # why they stay on still holds; say so before what it saved
            notes += [n for n in first.notes if n.startswith("N+1: ") or "last usable" in n]
            notes.append(f"not emptied, as {agree(len(restored), 'it stays', 'they stay')} "
                         f"on anyway (N+1, the last of a zone, no BMC or the power cool-down): "
                         f"{', '.join(names[h] for h in restored)}")
    except PlanError:   # kept hosts emptied after all: the packing's own order exists
        decided = first
        waves = plan_waves(cluster, _triples(problem.placement, target),
                           settings.per_host_limit)
    power_off, spares, left_on = decided.power_off, decided.spares, decided.left_on
    notes += decided.notes
    moves = _moves(cluster, waves, names, memo.made if memo is not None
                   and memo.cluster is cluster else {})
    hosts_before = int(problem.powered.sum())
    if len(spares) < problem.spare:
        notes.append(f"only {len(spares)} of the {problem.spare} spare hosts asked for can be "
                     f"kept empty")
    draft = PlanDraft(
        algorithm=algorithm, ranking=ranking, migrations=moves,
        power_off=tuple(names[h] for h in power_off), hosts_before=hosts_before,
        hosts_after=hosts_before - len(power_off),
        lower_bound=best_lower_bound(problem, packing),
        migrations_lower_bound=migration_lower_bound(problem, len(power_off) + len(spares)),
        spare=problem.spare, spare_hosts=tuple(names[h] for h in sorted(spares)),
        notes=tuple(notes), options=_plain_options(problem.options),
        idle_watts=settings.idle_watts, left_on=left_on)
    assert_plan_sound(cluster, moves, draft.power_off, rules=settings.rules,
                      per_host_limit=settings.per_host_limit,
                      chance=_chance(problem), memo=memo)
    return draft


def _triples(placement: np.ndarray, target: np.ndarray) -> list[tuple[int, int, int]]:
    """(instance, source, destination) of every instance the target moves, as Python ints."""
    rows = np.flatnonzero(target != placement)
    return list(zip(rows.tolist(), placement[rows].tolist(), target[rows].tolist(),
                    strict=True))


def _moves(cluster: Cluster, waves: list[tuple[int, int, int, int]], names: list[str],
           made: dict[tuple[int, int, int, int], Any]) -> tuple[Move, ...]:
    """The Move of each (instance, source, destination, wave), those in `made` reused."""
    instances, out = cluster.instances, []
    for key in waves:
        move = made.get(key)
        if move is None:
            i, src, dst, wave = key
            move = made[key] = Move(instance_id=instances[i].id,
                                    instance_name=instances[i].name, source=names[src],
                                    destination=names[dst], wave=wave)
        out.append(move)
    return tuple(out)


def best_lower_bound(problem: Problem, packing: Packing) -> int:
    """The best lower bound known on hosts left on: the volume bound, or the bound the
    algorithm proved (plus the spares) when it is higher."""
    bound = host_lower_bound(problem)
    if packing.proven_bound is not None:
        bound = max(bound, min(packing.proven_bound + problem.spare, int(problem.powered.sum())))
    return bound


@dataclass(frozen=True)
class PowerDecisions:
    """Which emptied hosts a packing powers off, which it keeps on and why."""

    power_off: list[int]
    spares: set[int]
    left_on: dict[str, str]
    notes: list[str]
    #: Emptied hosts kept on although the plan needs no empty host there (the last of a
    #: zone, N+1, no BMC): kept_hosts.keep_home gives them their instances back.
    kept: list[int] = field(default_factory=list)


def stay_on_reasons(no_bmc: Collection[str] | Mapping[str, str]) -> dict[str, str]:
    """Host -> why it cannot be powered off: the names of hosts without a BMC entry, or a
    mapping of hosts to their own reasons (the daemon's power cool-down)."""
    if isinstance(no_bmc, Mapping):
        return dict(no_bmc)
    return {host: NO_BMC for host in no_bmc}


def power_decisions(problem: Problem, target: np.ndarray, settings: PlanSettings,
                    no_bmc: Collection[str] | Mapping[str, str] = ()) -> PowerDecisions:
    """The emptied hosts to power off, after the spares, the last host of each zone, N+1
    and the hosts that cannot be powered off (no_bmc: see stay_on_reasons) are kept on: what
    a plan of this packing does, without its moves and waves (the front compares packings by
    it)."""
    names = [h.name for h in problem.cluster.hosts]
    notes: list[str] = []
    population = np.bincount(target, minlength=problem.n_hosts)
    candidates = np.nonzero(problem.powered & problem.emptiable & (population == 0))[0]
    spares = _choose_spares(problem, candidates, problem.spare)
    padding = set(spares)
    for zone_host in _last_in_zone(problem, population, candidates, spares):
        spares.add(zone_host)
        notes.append(f"{names[zone_host]} stays powered: it is the last usable host of its "
                     f"availability zone")
    power_off = [int(h) for h in candidates if int(h) not in spares]
    if settings.migrate_only:
        left_on = {names[h]: MIGRATE_ONLY for h in power_off}
        if left_on:
            notes.append(f"migrate-only plan: no BMC file, so no host is powered off; "
                         f"{plural(len(left_on), 'host')} emptied and left on")
        return PowerDecisions([], spares, left_on, notes)
    kept = [h for h in spares if h not in padding]
    if settings.n_plus_one:
        n_plus = _n_plus_one(problem, target, power_off)
        if n_plus:
            spares.update(n_plus)
            kept += n_plus
            power_off = [h for h in power_off if h not in n_plus]
            notes.append(f"N+1: {', '.join(names[h] for h in n_plus)} "
                         f"{'stays' if len(n_plus) == 1 else 'stay'} powered so that the hosts "
                         f"left on can absorb the failure of the largest of them "
                         f"([planner] n_plus_one)")
    unpowered = stay_on_reasons(no_bmc)
    left_on = {names[h]: unpowered[names[h]] for h in power_off if names[h] in unpowered}
    power_off = [h for h in power_off if names[h] not in unpowered]
    no_entry = sorted(h for h, why in left_on.items() if why == NO_BMC)
    if no_entry:
        notes.append(f"emptied but left on, no BMC configured: {', '.join(no_entry)}")
    for host in sorted(set(left_on) - set(no_entry)):
        notes.append(f"{host}: {left_on[host]}")
    kept += [h for h in candidates.tolist() if names[h] in left_on]
    return PowerDecisions(power_off, spares, left_on, notes, kept)


def _n_plus_one(problem: Problem, target: np.ndarray, power_off: list[int]) -> list[int]:
    """The hosts to keep on, most capable first, until the free Placement capacity of the
    usable hosts left on covers the load of the most loaded one of them, in every class."""
    columns = len(problem.cluster.resource_classes)
    used = np.zeros((problem.n_hosts, columns))
    if problem.n_instances:
        np.add.at(used, target, problem.demand[:, :columns])
    capacity = problem.capacity[:, :columns]
    on = problem.powered & problem.receivers
    on[power_off] = False
    order = sorted(power_off, key=lambda h: -float(capacity[h].sum()))
    kept: list[int] = []
    while order:
        rows = np.flatnonzero(on)
        if rows.size == 0:
            break
        largest = int(rows[np.argmax(used[rows].sum(axis=1))])
        free = (capacity[rows] - used[rows]).sum(axis=0) - \
            (capacity[largest] - used[largest])
        if np.all(free + 1e-6 >= used[largest]):
            break
        host = order.pop(0)
        kept.append(host)
        on[host] = True
    return kept


def _chance(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    if problem.confidence is None or problem.cpu_limit is None:
        return None
    assert problem.usage_mean is not None and problem.usage_std is not None
    return problem.usage_mean, problem.usage_std, problem.cpu_limit, problem.confidence


def _plain_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options worth recording with the plan (scalars and short lists)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in options.items()
            if isinstance(v, (str, int, float, bool, tuple, list)) or v is None}


def _last_in_zone(problem: Problem, population: np.ndarray, candidates: np.ndarray,
                  spares: set[int]) -> list[int]:
    """For each zone whose usable hosts would all be powered off: its most capable one."""
    off = set(candidates.tolist()) - spares
    keep = []
    usable = problem.powered & problem.receivers
    for zone in np.unique(problem.host_zone[usable]).tolist():
        members = np.nonzero(usable & (problem.host_zone == zone))[0].tolist()
        if members and all(h in off for h in members):
            keep.append(max(members, key=lambda h: (problem.capacity[h, :3].sum(), -h)))
    return keep


def _choose_spares(problem: Problem, candidates: np.ndarray, wanted: int) -> set[int]:
    """Keep `wanted` empty hosts powered: hosts already empty first, then the most capable."""
    if wanted <= 0 or candidates.size == 0:
        return set()
    was_empty = np.bincount(problem.placement, minlength=problem.n_hosts) == 0
    scale = problem.capacity[:, :3].max(axis=0)
    scale[scale == 0] = 1.0
    size = (problem.capacity[:, :3] / scale).sum(axis=1)
    order = sorted(candidates.tolist(), key=lambda h: (not was_empty[h], -size[h], h))
    return set(order[:wanted])


def plan_waves(cluster: Cluster, moves: Sequence[tuple[int, int, int]], per_host_limit: int,
               leftover: list[tuple[int, int, int]] | None = None
               ) -> list[tuple[int, int, int, int]]:
    """Assign each (instance, source, destination) a wave.

    A destination holds a migrating instance from the start of its wave and a source frees it
    at the end, as Placement does. A move joins the earliest wave in which its destination has
    room, its source is under the per-host limit, and it meets no member of its anti-affinity
    groups. No progress means no safe order exists: PlanError, or, when a `leftover` list is
    given, the moves that could not be ordered go into it and the others are returned.
    """
    capacity = (cluster.capacity + 1e-6).tolist()
    used = cluster.usage.tolist()
    demand = cluster.demand_rows
    host_of = cluster.placement.copy()
    groups_of: dict[int, list[np.ndarray]] = defaultdict(list)
    index = cluster.instance_index
    for group in cluster.server_groups:
        if group.policy == "anti-affinity":
            rows = np.array([index[m] for m in group.members], dtype=np.int64)
            for row in rows.tolist():
                groups_of[row].append(rows)
    rows = np.array(moves, dtype=np.int64).reshape(-1, 3)
    roomy = always_room(cluster, rows)      # their room test passes whatever the order
    if not groups_of and len(roomy) == len(np.unique(rows[:, 2])):
        return _in_turn(rows, max(per_host_limit, 1))   # nothing waits: sources send in turn
    queues: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for item, src, dst in sorted(moves, key=itemgetter(1, 0)):
        queues[src].append((item, dst))
    watched = {dst for _item, _src, dst in moves} - roomy
    out: list[tuple[int, int, int, int]] = []
    wave = 0
    limit = max(per_host_limit, 1)
    while queues:
        wave += 1
        arriving: dict[int, set[int]] = defaultdict(set)
        batch = []
        for src in list(queues):
            queue, keep, taken = queues[src], [], 0
            for pos, (item, dst) in enumerate(queue):
                if taken == limit:
                    keep.extend(queue[pos:])
                    break
                room = dst in roomy
                if not room:
                    now, need = used[dst], demand[item]
                    for u, d, c in zip(now, need, capacity[dst], strict=True):
                        if not u + d <= c:
                            break
                    else:
                        room = True
                if room and (item not in groups_of
                             or not _meets_group(item, dst, groups_of, host_of, arriving)):
                    if dst not in roomy:
                        used[dst] = [u + d for u, d in zip(now, need, strict=True)]
                    if groups_of:               # only groups look at the arrivals
                        arriving[dst].add(item)
                    batch.append((item, src, dst))
                    taken += 1
                else:
                    keep.append((item, dst))
            if keep:
                queues[src] = keep
            else:
                del queues[src]
        if not batch and leftover is not None:
            leftover.extend((i, src, dst) for src, q in queues.items() for i, dst in q)
            break
        if not batch:
            waiting = [i for q in queues.values() for i, _ in q]
            names = ", ".join(cluster.instances[i].name for i in waiting[:3])
            raise PlanError(f"no safe order for the remaining {plural(len(waiting), 'migration')} "
                            f"({names}...): each waits for room that another one holds")
        for item, src, dst in batch:
            if src in watched:                  # only a destination's usage is read
                used[src] = [u - d for u, d in zip(used[src], demand[item], strict=True)]
            out.append((item, src, dst, wave))
        if groups_of:                           # only groups look at where members are
            moved = np.array([m[0] for m in batch], dtype=np.int64)
            host_of[moved] = [m[2] for m in batch]
    return out


def _in_turn(rows: np.ndarray, limit: int) -> list[tuple[int, int, int, int]]:
    """plan_waves when no move ever waits for room or for a group: the wave loop then
    takes the first `limit` moves of every source's queue (moves by source, then instance)
    each wave, so the k-th goes in wave k // limit + 1; the same moves in the same order."""
    n = len(rows)
    queued = rows[np.lexsort((rows[:, 0], rows[:, 1]))]
    first = np.r_[True, queued[1:, 1] != queued[:-1, 1]] if n else np.zeros(0, dtype=bool)
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0)) if n else first
    wave = (np.arange(n) - start) // limit + 1
    done = np.argsort(wave, kind="stable")
    return list(zip(queued[done, 0].tolist(), queued[done, 1].tolist(),
                    queued[done, 2].tolist(), wave[done].tolist(), strict=True))


def always_room(cluster: Cluster, moves: Sequence[tuple[int, int, int]] | np.ndarray
                ) -> set[int]:
    """The destinations of the moves that are no source and hold their usage plus every
    instance moving to them within capacity: plan_waves' room test for them passes in any
    order of arrivals. Only when usage and demand are whole numbers (every sum is then
    exact, whatever the order); otherwise none."""
    if not len(moves):
        return set()
    demand, usage = cluster.demand, cluster.usage
    whole = all(bool(np.all(a == np.floor(a))) for a in (demand, usage))
    largest = float(np.abs(demand).max(initial=0.0)) * (len(moves) + 1) \
        + float(np.abs(usage).max(initial=0.0))
    if not whole or not largest < 2.0 ** 52:
        return set()
    rows = np.array(moves, dtype=np.int64).reshape(-1, 3)
    total = usage.copy()
    np.add.at(total, rows[:, 2], demand[rows[:, 0]])
    fits = np.all(total <= cluster.capacity + 1e-6, axis=1)
    fits[rows[:, 1]] = False
    dests = np.unique(rows[:, 2])
    return set(dests[fits[dests]].tolist())


def _meets_group(item: int, dst: int, groups_of: dict[int, list[np.ndarray]],
                 host_of: np.ndarray, arriving: dict[int, set[int]]) -> bool:
    if item not in groups_of:
        return False
    for rows in groups_of[item]:
        others = rows[rows != item]
        if np.any(host_of[others] == dst) or arriving[dst].intersection(others.tolist()):
            return True
    return False
