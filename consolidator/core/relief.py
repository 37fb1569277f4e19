"""Relief: move work off the hosts that usage overloads, the fewest and smallest first.

Consolidation packs on usage (UCaC, paper 003), so usage can outgrow a host. A powered host
is overloaded when the used capacity at confidence of its instances' current usage,
``sum(mu) + Phi^-1(alpha) sqrt(sum(sigma^2))``, exceeds its cores (times its relative CPU
speed), or when its instances' memory exceeds its physical memory. For each overloaded host,
worst first, relief takes off the instance whose leaving alone ends the overload and that has
the least memory (the cheapest live migration, as MMT chooses); when no single instance
does, the one with the most CPU, and again. Each goes to the host, among those that may take
it (Placement's room in every class, zone, server groups, traits, memory), where the chance
constraint still holds, the best fit on UCaC (BF-UCaC, 003 5.1). When none has room, the
next host consolidator powered off is powered on, the most efficient first (cores x speed
per peak watt, else the largest). Pure: the use case (app/relief.py) reads the cloud and
runs the moves as a plan through the executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from consolidator.core.algorithms.state import PackingState
from consolidator.core.checker import assert_plan_sound
from consolidator.core.constraints import Rules, UsageModel, build_problem, left_alone_reason
from consolidator.core.maintenance import drained_by
from consolidator.core.model import Cluster, Host
from consolidator.core.plan import Move, PlanDraft
from consolidator.core.planner import PlanSettings, plan_waves
from consolidator.core.rankings.ucac import UCaCRanking, d_alpha
from consolidator.core.rollback_plan import is_ours
from consolidator.core.wording import plural

EPS = 1e-6


@dataclass(frozen=True)
class Overload:
    """A host over its cores at confidence, or short of memory."""

    host: str
    ucac: float
    cores: float
    memory_mb: float
    memory_limit_mb: float

    @property
    def cpu(self) -> bool:
        """Whether its UCaC exceeds its cores."""
        return self.ucac > self.cores + EPS

    @property
    def memory(self) -> bool:
        """Whether its instances' memory exceeds its physical memory."""
        return self.memory_mb > self.memory_limit_mb + EPS

    def describe(self) -> str:
        """'c1: CPU 5.2 of 4 cores at confidence' or '... memory 70000 of 65536 MB'."""
        parts = []
        if self.cpu:
            parts.append(f"CPU {self.ucac:.2f} of {self.cores:g} cores at confidence")
        if self.memory:
            parts.append(f"memory {self.memory_mb:g} of {self.memory_limit_mb:g} MB")
        return f"{self.host}: {', '.join(parts)}"


@dataclass(frozen=True)
class Relief:
    """What relief does: moves (instance row, source row, destination row) in the cluster
    it was given (with power_on hosts counted as on), hosts to power on first, the overloads
    found and those it could not end."""

    cluster: Cluster
    moves: tuple[tuple[int, int, int], ...]
    power_on: tuple[str, ...]
    overloads: tuple[Overload, ...]
    unresolved: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def physical_cores(host: Host) -> float:
    """The cores usage is measured against: vcpus less the reserved ones."""
    return float(max(host.vcpus - host.reserved_vcpus, 0))


def power_on_order(cluster: Cluster, speeds: np.ndarray | None = None,
                   rules: Rules | None = None) -> list[str]:
    """Hosts consolidator powered off (off or down, disabled with its reason) and may power
    on again (not drained: only its undrain brings a drained host back; not kept out by the
    rules' exclusions and scope), the most efficient first: cores x speed per peak watt where
    the watts are known (ahead of the others), then the most cores x speed."""
    speeds = np.ones(len(cluster.hosts)) if speeds is None else speeds
    rows = [h for h, host in enumerate(cluster.hosts)
            if (host.state == "down" or host.power == "off")
            and is_ours(host.disabled_reason)
            and drained_by(host.disabled_reason) is None
            and (rules is None or left_alone_reason(host, rules) is None)]

    def key(h: int) -> tuple[int, float, str]:
        host = cluster.hosts[h]
        work = physical_cores(host) * float(speeds[h])
        if host.peak_watts:
            return (0, -work / host.peak_watts, host.name)
        return (1, -work, host.name)

    return [cluster.hosts[h].name for h in sorted(rows, key=key)]


def switched_on(cluster: Cluster, names: Sequence[str]) -> Cluster:
    """The cluster with these hosts powered, up and enabled (what a power-on makes them)."""
    wanted = set(names)
    hosts = tuple(replace(h, power="on", state="up", status="enabled", disabled_reason=None)
                  if h.name in wanted else h for h in cluster.hosts)
    return replace(cluster, hosts=hosts)


class _Relief:
    """The bookkeeping of one relief run over a PackingState."""

    def __init__(self, cluster: Cluster, rules: Rules, usage: UsageModel,
                 candidates: Sequence[str]) -> None:
        assert usage.confidence is not None
        self.cluster = switched_on(cluster, candidates)
        self.problem = build_problem(self.cluster, rules, usage=usage)
        self.state = PackingState(self.problem)
        self.z = d_alpha(usage.confidence)
        index = self.cluster.host_index
        self.candidates = [index[n] for n in candidates]
        for h in self.candidates:
            self.state.close(h)
        self.opened: list[int] = []
        self.memory = self.problem.demand[:, 1].astype(float)
        self.memory_used = np.bincount(self.state.host_of, weights=self.memory,
                                       minlength=self.problem.n_hosts) \
            if self.problem.n_instances else np.zeros(self.problem.n_hosts)
        self.memory_limit = np.array([max(h.memory_mb - h.reserved_memory_mb, 0)
                                      for h in self.cluster.hosts], dtype=float)
        self.ranking = UCaCRanking()
        self.moved = 0

    def ucac(self, h: int, less: int | None = None) -> float:
        mu, var = float(self.state.usage_mu[h]), float(self.state.usage_var[h])
        if less is not None:
            mu -= float(self.state.usage_mean[less])
            var -= float(self.state.usage_var_item[less])
        return mu + self.z * float(np.sqrt(max(var, 0.0)))

    def over(self, h: int, less: int | None = None) -> bool:
        assert self.state.cpu_limit is not None
        memory = self.memory_used[h] - (self.memory[less] if less is not None else 0.0)
        return bool(self.ucac(h, less) > self.state.cpu_limit[h] + EPS
                    or memory > self.memory_limit[h] + EPS)

    def overload(self, h: int) -> Overload:
        assert self.state.cpu_limit is not None
        return Overload(self.cluster.hosts[h].name, self.ucac(h),
                        float(self.state.cpu_limit[h]), float(self.memory_used[h]),
                        float(self.memory_limit[h]))

    def pick(self, h: int, tried: set[int]) -> int | None:
        """The instance to take off host h next, or None when none may move."""
        items = [i for i in self.state.items_on(h)
                 if self.problem.movable[i] and i not in tried]
        if not items:
            return None
        enough = [i for i in items if not self.over(h, less=i)]
        if enough:
            return min(enough, key=lambda i: (self.memory[i], self.state.usage_mean[i], i))
        if self.ucac(h) > float(self.state.cpu_limit[h]) + EPS:    # type: ignore[index]
            return max(items, key=lambda i: (self.state.usage_mean[i], -self.memory[i], -i))
        return max(items, key=lambda i: (self.memory[i], -i))

    def feasible(self, item: int) -> np.ndarray:
        mask = self.state.feasible(item)
        mask &= self.memory_used + self.memory[item] <= self.memory_limit + EPS
        return self.state.prefer_soft(item, mask)

    def destination(self, item: int) -> int:
        """Best fit on UCaC among the open hosts, else the next host to power on, or -1."""
        mask = self.feasible(item)
        if mask.any():
            return self.ranking.choose(self.state, item, mask)
        for h in self.candidates:
            if h in self.opened:
                continue
            self.state.open[h] = True
            mask = self.feasible(item)
            if mask[h]:
                self.opened.append(h)
                return h
            self.state.open[h] = False
        return -1

    def move(self, item: int, dest: int) -> None:
        source = int(self.state.host_of[item])
        self.memory_used[source] -= self.memory[item]
        self.memory_used[dest] += self.memory[item]
        self.state.move(item, dest)
        self.moved += 1


def relieve(cluster: Cluster, usage: UsageModel, *, rules: Rules | None = None,
            power_on: Sequence[str] = (), max_moves: int | None = None,
            trigger: float | None = None) -> Relief:
    """Moves that end every overload they can, the fewest and smallest first.

    usage.confidence must be set (the chance constraint); power_on lists the hosts that may
    be powered on, in order (see power_on_order); max_moves caps the moves (None: no cap).
    trigger: a lower confidence at which a host must be over its cores to be relieved at
    all (hysteresis: relieved hosts are brought under at usage.confidence); None: the same.
    """
    if usage.confidence is None:
        raise ValueError("relief needs a confidence (the ucac capacity model)")
    run = _Relief(cluster, rules or Rules(), usage, power_on)
    problem, state = run.problem, run.state
    watched = [h for h in range(problem.n_hosts)
               if cluster.hosts[h].usable and problem.receivers[h]]
    hot = [h for h in watched if run.over(h)]
    if trigger is not None and trigger < usage.confidence:
        z, run.z = run.z, d_alpha(trigger)
        hot = [h for h in hot if run.over(h)]
        run.z = z
    overloads = tuple(run.overload(h) for h in hot)
    assert state.cpu_limit is not None
    hot.sort(key=lambda h: (-(run.ucac(h) - float(state.cpu_limit[h])), h))  # type: ignore[index]
    for h in hot:
        state.close(h)
    unresolved: list[str] = []
    notes: list[str] = []
    capped = False
    for h in hot:
        tried: set[int] = set()
        while run.over(h):
            if max_moves is not None and run.moved >= max_moves:
                capped = True
                break
            item = run.pick(h, tried)
            if item is None:
                unresolved.append(cluster.hosts[h].name)
                break
            tried.add(item)
            dest = run.destination(item)
            if dest >= 0:
                run.move(item, dest)
        if capped:
            unresolved.extend(cluster.hosts[k].name for k in hot if run.over(k)
                              and cluster.hosts[k].name not in unresolved)
            notes.append(f"stopped after {plural(max_moves or 0, 'move')} ([relief] "
                         f"max_migrations)")
            break
    moves = tuple((int(i), int(problem.placement[i]), int(state.host_of[i]))
                  for i in np.flatnonzero(state.host_of != problem.placement))
    opened = tuple(run.cluster.hosts[h].name for h in run.opened
                   if np.any(state.host_of == h))
    return Relief(cluster=switched_on(cluster, opened), moves=moves, power_on=opened,
                  overloads=overloads, unresolved=tuple(unresolved), notes=tuple(notes))


def overloads(cluster: Cluster, usage: UsageModel, *, rules: Rules | None = None
              ) -> list[Overload]:
    """The powered hosts over their cores at confidence or short of memory, now."""
    return list(relieve(cluster, usage, rules=rules, max_moves=0).overloads)


def relief_draft(cluster: Cluster, settings: PlanSettings, *, power_on: Sequence[str] = (),
                 max_moves: int | None = None, trigger: float | None = None
                 ) -> tuple[PlanDraft, Relief]:
    """Relief as a checked plan: power-on first, then the moves in waves that never overload
    a host in Placement nor overrun the per-host limit; the checker verifies the chance
    constraint on every host that receives."""
    relief = relieve(cluster, settings.usage, rules=settings.rules, power_on=power_on,
                     max_moves=max_moves, trigger=trigger)
    live = relief.cluster
    names = [h.name for h in live.hosts]
    waves = plan_waves(live, list(relief.moves), settings.per_host_limit)
    moves = tuple(Move(instance_id=live.instances[i].id, instance_name=live.instances[i].name,
                       source=names[src], destination=names[dst], wave=wave)
                  for i, src, dst, wave in waves)
    problem = build_problem(live, settings.rules, usage=settings.usage)
    assert problem.usage_mean is not None and problem.usage_std is not None
    assert problem.cpu_limit is not None and problem.confidence is not None
    assert_plan_sound(live, moves, (), rules=settings.rules,
                      per_host_limit=settings.per_host_limit,
                      chance=(problem.usage_mean, problem.usage_std, problem.cpu_limit,
                              problem.confidence))
    powered = sum(h.usable for h in cluster.hosts)
    notes = [f"overloaded: {o.describe()}" for o in relief.overloads]
    if relief.power_on:
        notes.append(f"powered on for relief, the most efficient first: "
                     f"{', '.join(relief.power_on)}")
    if relief.unresolved:
        notes.append(f"still overloaded after relief (no movable instance fits anywhere, "
                     f"nor on a host consolidator may power on): "
                     f"{', '.join(relief.unresolved)}")
    notes += relief.notes
    draft = PlanDraft(algorithm="relief", ranking="ucac", migrations=moves, power_off=(),
                      power_on=relief.power_on, hosts_before=powered,
                      hosts_after=powered + len(relief.power_on), lower_bound=0,
                      migrations_lower_bound=0, spare=0, notes=tuple(notes),
                      options={"capacity_model": "ucac",
                               "confidence": settings.usage.confidence},
                      idle_watts=settings.idle_watts)
    return draft, relief
