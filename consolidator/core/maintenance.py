"""Host maintenance: the plan that drains hosts (moves every instance off them, and nothing
else), and the service reason that marks a drained host.

A drain is a plan like any other: stored, reviewed, approved and run by the executor, which
disables the drained hosts with ``drain_reason(plan)`` before the first migration and, with
--power-off, powers them off through the guarded path. Its moves keep the planner's
constraints (capacity in every class, zones, traits, units, hard anti-affinity, the hosts the
rules keep out, the per-host limit) and are checked by the independent checker. An instance
that cannot move (pinned, in a hard affinity group, not ACTIVE, of an excluded project, or
without room) blocks the drain before anything moves: DrainBlocked names each one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from consolidator.core.algorithms.bounds import host_lower_bound
from consolidator.core.checker import PlanCheckError, assert_plan_sound
from consolidator.core.constraints import (
    Rules,
    build_problem,
    left_alone_reason,
    pin_reason,
    trait_problem,
    unit_problem,
)
from consolidator.core.errors import ConsolidatorError, UsageError
from consolidator.core.model import Cluster, Host, Instance
from consolidator.core.plan import Move, PlanDraft
from consolidator.core.planner import PlanError, plan_waves
from consolidator.core.wording import plural

#: The plan's algorithm column for a drain.
DRAIN_ALGORITHM = "drain-hosts"
_REASON_PREFIX = "consolidator: drained by plan "


def drain_reason(plan_id: str) -> str:
    """The nova-compute disabled reason of a host a drain plan emptied."""
    return f"{_REASON_PREFIX}{plan_id} (maintenance)"


def drained_by(reason: str | None) -> str | None:
    """The id of the drain plan a disabled reason names, or None."""
    if not reason or not reason.startswith(_REASON_PREFIX):
        return None
    return reason[len(_REASON_PREFIX):].split(" ", 1)[0] or None


class DrainBlocked(ConsolidatorError):
    """Some instances of the hosts to drain cannot move: nothing is planned."""

    def __init__(self, unmovable: dict[str, str]) -> None:
        self.unmovable = dict(unmovable)
        listed = "; ".join(f"{name}: {why}" for name, why in list(unmovable.items())[:10])
        more = f"; and {len(unmovable) - 10} more" if len(unmovable) > 10 else ""
        super().__init__(f"the drain is blocked, nothing moves: "
                         f"{plural(len(unmovable), 'instance')} cannot leave ({listed}{more})")


@dataclass(frozen=True)
class DrainSettings:
    """The planner's rules and per-host limit, and whether the drained hosts power off."""

    rules: Rules
    per_host_limit: int = 2
    power_off: bool = False


def drain_draft(cluster: Cluster, hosts: Sequence[str], settings: DrainSettings) -> PlanDraft:
    """The checked plan that moves every instance off `hosts`, and nothing else;
    DrainBlocked naming every instance that cannot move, UsageError for a host that cannot
    be drained at all."""
    drained = tuple(dict.fromkeys(hosts))
    rules = replace(settings.rules, scope=None)   # a drain names its hosts itself
    view = _drain_view(cluster, drained, rules)
    moves, unmovable = _destinations(view, drained, rules)
    if unmovable:
        raise DrainBlocked(unmovable)
    try:
        waves = plan_waves(view, moves, settings.per_host_limit)
    except PlanError as exc:
        raise DrainBlocked({"(order)": str(exc)}) from None
    names = [h.name for h in view.hosts]
    migrations = tuple(Move(view.instances[i].id, view.instances[i].name, names[s], names[d], w)
                       for i, s, d, w in waves)
    power_off = drained if settings.power_off else ()
    _check_drain(view, drained, migrations, power_off, rules, settings.per_host_limit)
    before = sum(1 for h in view.hosts if h.power != "off")
    notes = [f"drain of {', '.join(drained)}: "
             f"{plural(len(migrations), 'instance')} leave; each host is disabled with the "
             f"reason 'consolidator: drained by plan ...' before the first migration"
             + (" and powered off once empty" if power_off else " and left on")]
    return PlanDraft(
        algorithm=DRAIN_ALGORITHM, ranking=None, migrations=migrations, power_off=power_off,
        hosts_before=before, hosts_after=before - len(power_off),
        lower_bound=host_lower_bound(build_problem(view, rules)),
        migrations_lower_bound=len(migrations), spare=0, notes=tuple(notes),
        options={"drain": list(drained), "power_off": settings.power_off}, drain=drained)


def _drain_view(cluster: Cluster, drained: tuple[str, ...], rules: Rules) -> Cluster:
    """The cluster with the hosts to drain counted enabled (a drain disables them itself,
    and an earlier drain may have), after refusing hosts that cannot be drained."""
    hosts = []
    for host in cluster.hosts:
        if host.name in drained:
            why = left_alone_reason(host, rules) or _not_drainable(host)
            if why:
                raise UsageError(f"{host.name} cannot be drained: it is {why}")
            host = replace(host, status="enabled", disabled_reason=None)
        hosts.append(host)
    missing = [h for h in drained if h not in cluster.host_index]
    if missing:
        raise UsageError(f"no compute host is named {missing[0]!r}")
    return Cluster(tuple(hosts), cluster.instances, cluster.server_groups)


def _not_drainable(host: Host) -> str | None:
    if host.power == "off" or host.state != "up":
        return "down or powered off: its instances cannot be live-migrated"
    return None


def _destinations(view: Cluster, drained: tuple[str, ...], rules: Rules
                  ) -> tuple[list[tuple[int, int, int]], dict[str, str]]:
    """(instance row, source row, destination row) for every instance on a drained host,
    the largest first, each to the host of its zone it fits best; and the ones that fit
    nowhere or may not move, with why."""
    hosts = view.hosts
    index = view.host_index
    hard_affinity = {m for g in view.server_groups
                     if g.policy == "affinity" and len(g.members) > 1 for m in g.members}
    receivers = np.array([h.name not in drained and h.usable
                          and left_alone_reason(h, rules) is None for h in hosts])
    capacity = view.capacity
    scale = np.where(capacity.max(axis=0) > 0, capacity.max(axis=0), 1.0)
    used = view.usage.copy()
    host_of = {i.id: i.host for i in view.instances}
    rows = [r for r, i in enumerate(view.instances) if i.host in drained]
    rows.sort(key=lambda r: (-float((view.demand[r] / scale).sum()), view.instances[r].name))
    moves, unmovable = [], {}
    for row in rows:
        inst = view.instances[row]
        reason = pin_reason(inst, rules, hard_affinity)
        if reason is None:
            fits = _fits(view, inst, row, receivers, used, host_of)
            if not fits.any():
                zone = hosts[index[inst.host]].availability_zone
                reason = f"no room: no host of zone {zone} that may receive takes it"
        if reason is not None:
            unmovable[inst.name] = reason
            continue
        free_after = ((capacity - used - view.demand[row]) / scale).sum(axis=1)
        dest = int(np.flatnonzero(fits)[np.argmin(free_after[fits])])
        used[dest] += view.demand[row]
        host_of[inst.id] = hosts[dest].name
        moves.append((row, index[inst.host], dest))
    return moves, unmovable


def _fits(view: Cluster, inst: Instance, row: int, receivers: np.ndarray, used: np.ndarray,
          host_of: dict[str, str]) -> np.ndarray:
    """(H,) the hosts that may take the instance now: receivers of its zone with room in
    every class, the traits and units its flavor needs, and no member of its anti-affinity
    groups."""
    source = view.hosts[view.host_index[inst.host]]
    room = np.all(used + view.demand[row] <= view.capacity + 1e-6, axis=1)
    ok = receivers & room
    apart = {host_of[m] for g in view.server_groups if g.policy == "anti-affinity"
             and inst.id in g.members for m in g.members if m != inst.id}
    for h in np.flatnonzero(ok):
        host = view.hosts[h]
        if host.availability_zone != source.availability_zone or host.name in apart or \
                trait_problem(host, inst) or any(unit_problem(host, rc, inst.amount(rc))
                                                 for rc in view.resource_classes[3:]):
            ok[h] = False
    result: np.ndarray = ok
    return result


def _check_drain(view: Cluster, drained: tuple[str, ...], moves: tuple[Move, ...],
                 power_off: tuple[str, ...], rules: Rules, per_host_limit: int) -> None:
    """The independent checker, then the drain's own promise: every instance of the
    drained hosts moves, to a host not drained, and nothing else moves."""
    assert_plan_sound(view, moves, power_off, rules=rules, per_host_limit=per_host_limit)
    leaving = {i.id for i in view.instances if i.host in drained}
    moved = {m.instance_id for m in moves}
    problems = [f"{m.instance_name} is not on a drained host" for m in moves
                if m.instance_id not in leaving]
    problems += [f"{m.destination}, a drained host, receives {m.instance_name}"
                 for m in moves if m.destination in drained]
    problems += [f"{plural(len(leaving - moved), 'instance')} of the drained hosts stay "
                 f"put"] if leaving - moved else []
    if problems:
        raise PlanCheckError("the drain plan failed its check (a bug, please report it): "
                             + "; ".join(problems[:5]))
