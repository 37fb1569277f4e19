"""Rollback: a plan that puts the cloud back as a snapshot recorded it.

Rollback touches only what consolidator did, and all of it. Hosts that consolidator took out of
service (their nova-compute disabled with a reason that names a consolidator plan, and a
disable or power-off of theirs in the journal, succeeded or not: the caller says which) and
that were on in the snapshot are powered on and enabled first; a host whose BMC cannot be read
is noted: the run reads it again and leaves it disabled if it still cannot; a host disabled or
down for any other reason is reported and left alone, and nothing moves onto it. Then every
instance that still exists moves back to its host in the snapshot, in waves, through the same
executor. Instances created since stay where they are; instances deleted since are reported.
With partial, the moves that no longer fit or cannot be ordered are reported instead of
refusing the whole. When the cloud already matches, the plan is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from consolidator.core.checker import assert_plan_sound
from consolidator.core.constraints import Rules, is_true, left_alone_reason
from consolidator.core.model import Cluster, Instance
from consolidator.core.plan import Move, PlanDraft
from consolidator.core.planner import plan_waves
from consolidator.core.wording import agree, plural

#: The reason prefix consolidator writes when it disables a host.
OUR_REASON = "consolidator:"
#: The reason 'hosts power off --force' writes: the operator's hold, which no actor of
#: consolidator's undoes (only the operator's own 'hosts power on' ends it). It does not
#: start with OUR_REASON, so that anything that reads reasons takes it as the operator's.
OPERATOR_POWER_OFF = "consolidator hosts power off --force: powered off by an operator"
#: What 'hosts power off --force' wrote before 0.2.0: it starts with OUR_REASON, but it is
#: the operator's hold all the same.
OLD_OPERATOR_POWER_OFF = "consolidator: powered off by an operator (hosts power off --force)"


#: The reason a plan's power-off step writes when it disables an emptied host.
_EMPTYING_PREFIX = "consolidator: emptied by plan "
_EMPTYING_SUFFIX = " for power-off"


def emptying_reason(plan_id: str) -> str:
    """The nova-compute disabled reason of a host a plan emptied to power it off."""
    return f"{_EMPTYING_PREFIX}{plan_id}{_EMPTYING_SUFFIX}"


def emptied_by(reason: str | None) -> str | None:
    """The id of the plan that disabled a host to power it off, as its reason names it, or
    None."""
    if not reason or not reason.startswith(_EMPTYING_PREFIX) \
            or not reason.endswith(_EMPTYING_SUFFIX):
        return None
    return reason[len(_EMPTYING_PREFIX):-len(_EMPTYING_SUFFIX)] or None


def is_operator_power_off(reason: str | None) -> bool:
    """Whether a disabled reason is the one an operator's 'hosts power off --force' wrote
    (this release's or an older one's)."""
    return (reason or "") in (OPERATOR_POWER_OFF, OLD_OPERATOR_POWER_OFF)


def is_ours(reason: str | None) -> bool:
    """Whether a disabled reason is consolidator's own (an actor's, which an actor may undo),
    not the operator's: it starts with OUR_REASON and is not an operator's power-off."""
    return (reason or "").startswith(OUR_REASON) and not is_operator_power_off(reason)


def rollback_draft(target: Cluster, live: Cluster, *, per_host_limit: int = 2,
                   rules: Rules | None = None, ours: set[str] | None = None,
                   partial: bool = False, target_id: str = "",
                   bmc_power: Mapping[str, str] | None = None) -> PlanDraft:
    """The plan that moves the live cloud back to the target snapshot's placement.

    ours: the hosts consolidator journaled a disable or power-off of (None: any host disabled
    with a consolidator reason counts as ours). bmc_power: each host's power as its BMC reads
    it ('on', 'off' or 'unknown'), which wins over Nova's service state (Nova may report a
    powered-off compute up).
    """
    rules = rules or Rules()
    bmc_power = bmc_power or {}
    live = Cluster(hosts=tuple(replace(h, power="off") if bmc_power.get(h.name) == "off"
                               else h for h in live.hosts),
                   instances=live.instances, server_groups=live.server_groups)
    was = {h.name: h for h in target.hosts}
    notes = []
    power_on, theirs = [], []
    for h in live.hosts:
        if h.name not in was or was[h.name].power == "off" or not was[h.name].usable \
                or h.usable:
            continue
        if is_ours(h.disabled_reason) and (ours is None
                                                                 or h.name in ours):
            power_on.append(h.name)
        else:
            theirs.append(f"{h.name} ({h.status}/{h.state}"
                          f"{': ' + h.disabled_reason if h.disabled_reason else ''})")
    if theirs:
        notes.append(f"left alone, not disabled or powered off by consolidator: "
                     f"{', '.join(theirs)}")
    unread = [name for name in power_on if bmc_power.get(name) == "unknown"]
    if unread:
        notes.append(f"{', '.join(unread)}: {agree(len(unread), 'its', 'their')} BMC cannot "
                     f"be read now; the rollback reads it again, and a host whose power still "
                     f"cannot be read stays disabled")
    # After the power-on step those hosts are usable again: plan against that future state.
    future = Cluster(hosts=tuple(replace(h, status="enabled", state="up", power="on")
                                 if h.name in power_on else h for h in live.hosts),
                     instances=live.instances, server_groups=live.server_groups)
    target_host = {i.id: i.host for i in target.instances}
    deleted = [i.name for i in target.instances if i.id not in future.instance_index]
    if deleted:
        notes.append(f"{plural(len(deleted), 'instance')} of the snapshot no longer exist: "
                     f"{', '.join(deleted[:10])}{' ...' if len(deleted) > 10 else ''}")
    created = [i.name for i in future.instances if i.id not in target_host]
    if created:
        notes.append(f"{plural(len(created), 'instance')} created since the snapshot "
                     f"{agree(len(created), 'stays', 'stay')} where they are")
    index = future.host_index
    moves, stuck, barred, kept = [], [], [], []
    for row, inst in enumerate(future.instances):
        home = target_host.get(inst.id)
        if home is None or home == inst.host or home not in index:
            continue
        if _pinned(inst, rules):
            kept.append(inst.name)
            continue
        if inst.status != "ACTIVE":
            stuck.append(f"{inst.name} ({inst.status})")
            continue
        if not future.hosts[index[home]].usable or \
                left_alone_reason(future.hosts[index[home]], rules) or \
                left_alone_reason(future.hosts[index[inst.host]], rules):
            barred.append(f"{inst.name} (to {home})")
            continue
        moves.append((row, index[inst.host], index[home]))
    if stuck:
        notes.append(f"not ACTIVE, so not moved back: {', '.join(stuck[:10])}")
    if kept:
        notes.append(f"pinned ({rules.exclude_key}=true) or of an excluded project, so not "
                     f"moved back: {', '.join(kept[:10])}")
    if barred:
        notes.append(f"not moved back, their host may not receive: {', '.join(barred[:10])}")
    leftover: list[tuple[int, int, int]] | None = [] if partial else None
    if leftover is not None:
        moves = _fitting(future, moves, leftover)
    waves = plan_waves(future, moves, per_host_limit, leftover)
    if leftover:
        n = len(leftover)
        notes.append(f"partial: {plural(n, 'instance')} {agree(n, 'does', 'do')} not fit back "
                     f"and {agree(n, 'stays where it is', 'stay where they are')}: "
                     f"{', '.join(future.instances[i].name for i, _, _ in leftover[:10])}")
    migrations = tuple(Move(future.instances[i].id, future.instances[i].name,
                            future.hosts[s].name, future.hosts[d].name, w)
                       for i, s, d, w in waves)
    assert_plan_sound(future, migrations, (), rules=replace(rules, exclude_key=""),
                      per_host_limit=per_host_limit)
    on = {h.name for h in live.hosts if h.power != "off" and
          (h.state == "up" or bmc_power.get(h.name) == "on")}
    return PlanDraft(algorithm="rollback", ranking=None, migrations=migrations, power_off=(),
                     power_on=tuple(power_on), hosts_before=len(on),
                     hosts_after=len(on | set(power_on)), lower_bound=0,
                     migrations_lower_bound=len(migrations), spare=0, notes=tuple(notes),
                     options={"target_snapshot": target_id} if target_id else {})


def _pinned(inst: Instance, rules: Rules) -> bool:
    """Whether no plan may move the instance: pinned by its metadata, or of an excluded
    project (core/host_gate.py asks the same at the moment of the move)."""
    return bool(rules.exclude_key and is_true(inst.metadata.get(rules.exclude_key, ""))) or \
        bool(inst.project_id and inst.project_id in rules.excluded_projects)


def _fitting(cluster: Cluster, moves: list[tuple[int, int, int]],
             leftover: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The moves whose destinations can hold them once every kept move is done; the others
    go to leftover."""
    used = cluster.usage.copy()
    for item, src, _ in moves:
        used[src] -= cluster.demand[item]
    kept = []
    for item, src, dst in moves:
        if ((used[dst] + cluster.demand[item]) <= cluster.capacity[dst] + 1e-6).all():
            used[dst] += cluster.demand[item]
            kept.append((item, src, dst))
        else:
            used[src] += cluster.demand[item]
            leftover.append((item, src, dst))
    return kept
