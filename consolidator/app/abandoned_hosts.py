"""Hosts a plan disabled to power them off and then left on for good: back in service.

A plan's power-off step disables the emptied host ('consolidator: emptied by plan P for
power-off'), then asks its BMC to power it off. An apply killed between the two, and then
overtaken by a newer plan (so that neither the daemon nor the operator resumes it), left the
host disabled, on and empty: capacity nobody uses, which no plan counts (a disabled host is
neither emptied nor given work) and nothing else took back (issue 45, found by the long
randomized run). Each daemon cycle, once the plans left running are resumed or marked
interrupted, puts such a host back in service: enabled, through the executor's guarded
power-on path (journaled, with the gate asked, which refuses a host whose shutdown is still
pending). The cycle's plan may then empty it and power it off again, properly.

Where the operator held such a host through Nova first (disabled with a reason of their
own), the hold stays, and the host's record follows the cloud: 'held by the operator', not
'emptying' for ever by a plan that no longer runs (found by the same run on PostgreSQL).
Likewise a drain that lost its lease and was overtaken leaves its host 'drained', not
'draining' for ever: the drain still holds it, until undrain. And a host an apply recorded
'emptying' in its pre-flight, killed before that host's power-off step disabled it, is in
service: on, enabled and given work, as the cloud shows.

A plan counts as running only while its status says so *and* someone holds the cloud's
executor lease (under any clouds.yaml name of the cloud): a plan killed under another name
keeps its status 'running', since no daemon under this name triages it (found by the SQLite
long run of issue 45), yet nothing runs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from consolidator.app.leadership import LeaseHeldError, executor_holder
from consolidator.app.review import cancel, power_on_plan
from consolidator.core import host_gate as hg
from consolidator.core.maintenance import drained_by
from consolidator.core.rollback_plan import emptied_by, is_ours
from consolidator.core.wording import plural
from consolidator.power.driver import read_power
from consolidator.store import host_states
from consolidator.store.plans import statuses

if TYPE_CHECKING:
    from consolidator.app.apply import Outcome
    from consolidator.app.context import AppContext
    from consolidator.openstack.inventory import Inventory

LOG = logging.getLogger("consolidator.daemon")

#: Recorded states of a shutdown requested and not known to be done: the host may be going
#: down, so it stays disabled (app/pending_shutdowns.py records it off once its BMC reads
#: off; 'hosts power on --force' is the operator's end of it).
PENDING = (hg.POWERING_OFF, hg.OFF)


def abandoned(ctx: AppContext, inventory: Inventory,
              recorded: dict[str, host_states.HostState]) -> dict[str, str]:
    """Each host that is up in Nova, disabled with the emptying reason of a plan that is not
    running, not recorded with a shutdown pending (`recorded`: the cloud's host states), and
    read on by its BMC, with that plan's id (only these hosts' BMCs are read)."""
    found = {h.name: plan_id for h in inventory.cluster.hosts
             if h.status == "disabled" and h.state == "up"
             and (plan_id := emptied_by(h.disabled_reason)) is not None}
    if not found:
        return {}
    running = still_running(ctx, inventory, set(found.values()))
    # a shutdown still pending is the gate's and the operator's to end
    lookup = ctx.power_lookup()
    on = {}
    for host, plan_id in sorted(found.items()):
        if plan_id in running or (host in recorded and recorded[host].state in PENDING):
            continue
        driver = lookup(host)
        if driver is not None and read_power(driver) == "on":
            on[host] = plan_id
    return on


def put_back_in_service(ctx: AppContext, read: Callable[[], Inventory],
                        execute: Callable[[str], Outcome], target: int) -> list[str]:
    """Enable the hosts that plans no longer running left disabled and on (see the module's
    docstring), as one power-on plan run by `execute`; the hosts it enabled. `read` reads
    the live cloud; `target` is the padding the plan notes."""
    inventory = read()
    recorded = host_states.all_recorded(ctx.engine(), inventory.key,
                                        legacy=inventory.cloud)
    record_ended_steps(ctx, inventory, recorded)
    found = abandoned(ctx, inventory, recorded)
    if not found:
        return []
    hosts = sorted(found)
    why = "; ".join(f"{host} was left disabled and on by plan {found[host]}, which no longer "
                    f"runs" for host in hosts)
    LOG.warning("putting %s back in service: %s", plural(len(hosts), "host"), why)
    plan = power_on_plan(ctx, inventory, hosts, target, why=f"back in service: {why}")
    try:
        outcome = execute(plan.id)
    except LeaseHeldError as exc:     # an apply took the lease meanwhile: the next cycle
        cancel(ctx, plan.id, reason=f"refused: {exc}")
        return []
    return [] if outcome.interrupted else [h for h in hosts if h not in outcome.left_on]


def still_running(ctx: AppContext, inventory: Inventory, plan_ids: set[str]) -> set[str]:
    """Those of the plans that may be running now: status 'running' while someone holds the
    cloud's executor lease (a plan whose process died keeps its status until a daemon under
    its own name triages it)."""
    if not plan_ids or executor_holder(ctx, inventory.cloud) is None:
        return set()
    return {p for p, status in statuses(ctx.engine(), plan_ids).items() if status == "running"}


def record_ended_steps(ctx: AppContext, inventory: Inventory,
                       recorded: dict[str, host_states.HostState]) -> list[str]:
    """Make the record follow the cloud for each host that a plan no longer running left
    recorded as a step under way (`recorded`: the cloud's host states); those hosts.

    - 'emptying', and disabled by the operator with a reason of their own meanwhile: held by
      the operator (the gate records a hold so when it is asked; no plan asks about a
      disabled host);
    - 'draining', and still disabled with its drain's reason: drained. The operator's drain
      holds the host until undrain ('apply --resume' of the drain, if nothing overtook it,
      goes on from there: the gate treats both records alike);
    - 'emptying', and up and enabled (its plan was killed before it disabled the host at its
      power-off step): in service.
    """
    engine = ctx.engine()
    found: dict[str, tuple[str, str, str | None, str]] = {}   # host: from, to, plan, why
    for h in inventory.cluster.hosts:
        rec = recorded.get(h.name)
        if rec is None:
            continue
        if rec.state == hg.EMPTYING and h.status == "enabled" and h.state == "up":
            found[h.name] = (hg.EMPTYING, hg.IN_SERVICE, rec.plan_id,
                             "up and enabled: its plan no longer runs, and had not disabled "
                             "it yet")
        if h.status != "disabled":
            continue
        if rec.state == hg.EMPTYING and not is_ours(h.disabled_reason):
            found[h.name] = (hg.EMPTYING, hg.HELD, rec.plan_id, "disabled by the operator: "
                             f"{h.disabled_reason or 'no reason given'}")
        elif rec.state == hg.DRAINING and (drain := drained_by(h.disabled_reason)):
            found[h.name] = (hg.DRAINING, hg.DRAINED, drain,
                             f"held by the drain {drain}, which no longer runs")
    if not found:
        return []
    plans = {plan for _, _, plan, _ in found.values() if plan is not None}
    done = []
    for host, (was, now, plan, why) in sorted(found.items()):
        # asked again for each host, right before its change: an executor that starts
        # meanwhile records its own steps
        if plan in still_running(ctx, inventory, plans):
            continue
        if host_states.change(engine, inventory.key, host, now,
                              actor=hg.CYCLE, plan_id=plan if now == hg.DRAINED else None,
                              why=why, legacy=inventory.cloud, only_from=was):
            LOG.info("%s: recorded %r, no longer %r (plan %s no longer runs): %s", host, now,
                     was, plan, why)
            done.append(host)
    return done
