"""Rollback: a plan that puts the cloud back as a snapshot recorded it.

Hosts that were on in the snapshot and are off now are powered on and enabled first; then
every instance that still exists moves back to its host in the snapshot, in waves, through the
same executor. Instances created since stay where they are; instances deleted since are
reported. When the cloud already matches, the plan is empty.
"""

from __future__ import annotations

from dataclasses import replace

from consolidator.checker import assert_plan_sound
from consolidator.constraints import Rules
from consolidator.model import Cluster
from consolidator.plan import Move, PlanDraft
from consolidator.planner import plan_waves


def rollback_draft(target: Cluster, live: Cluster, *, per_host_limit: int = 2,
                   rules: Rules | None = None) -> PlanDraft:
    """The plan that moves the live cloud back to the target snapshot's placement."""
    rules = rules or Rules()
    was = {h.name: h for h in target.hosts}
    power_on = tuple(h.name for h in live.hosts
                     if h.name in was and was[h.name].power != "off" and was[h.name].usable
                     and not h.usable)
    # After the power-on step those hosts are usable again: plan against that future state.
    future = Cluster(hosts=tuple(replace(h, status="enabled", state="up", power="on")
                                 if h.name in power_on else h for h in live.hosts),
                     instances=live.instances, server_groups=live.server_groups)
    target_host = {i.id: i.host for i in target.instances}
    notes = []
    deleted = [i.name for i in target.instances if i.id not in future.instance_index]
    if deleted:
        notes.append(f"{len(deleted)} instances of the snapshot no longer exist: "
                     f"{', '.join(deleted[:10])}{' ...' if len(deleted) > 10 else ''}")
    created = [i.name for i in future.instances if i.id not in target_host]
    if created:
        notes.append(f"{len(created)} instances created since the snapshot stay where they are")
    index = future.host_index
    moves, stuck = [], []
    for row, inst in enumerate(future.instances):
        home = target_host.get(inst.id)
        if home is None or home == inst.host or home not in index:
            continue
        if inst.status != "ACTIVE":
            stuck.append(f"{inst.name} ({inst.status})")
            continue
        moves.append((row, index[inst.host], index[home]))
    if stuck:
        notes.append(f"not ACTIVE, so not moved back: {', '.join(stuck[:10])}")
    waves = plan_waves(future, moves, per_host_limit)
    migrations = tuple(Move(future.instances[i].id, future.instances[i].name,
                            future.hosts[s].name, future.hosts[d].name, w)
                       for i, s, d, w in waves)
    assert_plan_sound(future, migrations, (), rules=replace(rules, exclude_key=""),
                      per_host_limit=per_host_limit)
    powered = sum(h.power != "off" and h.state == "up" for h in live.hosts)
    return PlanDraft(algorithm="rollback", ranking=None, migrations=migrations, power_off=(),
                     power_on=power_on, hosts_before=powered,
                     hosts_after=powered + len(power_on), lower_bound=0,
                     migrations_lower_bound=len(migrations), spare=0, notes=tuple(notes))
