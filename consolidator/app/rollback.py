"""Rollback: read the live cloud and store the plan that puts it back as a snapshot was; and
a rollback from start to end (roll_back): prepare it (or find the interrupted one), confirm,
approve and run it. The caller shows it, asks, and runs the plan under its own progress
display."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from consolidator.app.cloud_key import cloud_key_of
from consolidator.app.context import AppContext
from consolidator.app.dry_run import dry_rollback_context
from consolidator.app.interrupted import overtaken
from consolidator.app.leadership import refuse_while_executor_runs
from consolidator.app.notify import notify
from consolidator.app.review import approve, cancel
from consolidator.app.settings import executor_settings, settings_from_config
from consolidator.app.snapshots import check_read_from, inventory_to_store, read_cloud
from consolidator.core.errors import UsageError
from consolidator.core.model import Cluster
from consolidator.core.plan import StoredPlan
from consolidator.core.rollback_plan import rollback_draft
from consolidator.core.wording import plural
from consolidator.store import journal
from consolidator.store.leases import LeaseHeldError
from consolidator.store.plans import list_plans, load_plan, save_plan
from consolidator.store.snapshots import Snapshot, load_snapshot

if TYPE_CHECKING:
    from consolidator.execution.executor import Outcome
    from consolidator.openstack.inventory import Inventory


@dataclass(frozen=True)
class PreparedRollback:
    """A stored rollback plan (None when the cloud already matches) and what it came from."""

    target: Snapshot
    live: Cluster
    notes: tuple[str, ...]
    plan: StoredPlan | None
    #: Stores the live snapshot and the plan under the ids shown, once confirmed; None when
    #: they are stored already (or there is nothing to do).
    store: Callable[[], StoredPlan] | None = None

    @property
    def plan_id(self) -> str | None:
        """The rollback plan's id, or None when there is nothing to do."""
        return self.plan.id if self.plan is not None else None


#: Journal actions that take a host out of service: a row of any of them, whatever its end
#: (succeeded, failed, or left running by a crash), is consolidator's intent on that host.
TAKEN_OUT = ("disable", "power_off", "force_down")


def taken_out_by_us(ctx: AppContext, cloud: str) -> set[str]:
    """The hosts consolidator set out to disable or power off in a cloud (under any of its
    clouds.yaml names), from the journal's intent: succeeded or not, so that a kill -9
    between the disable and the power-off or during it, or a BMC that refused its login,
    leaves nothing behind for rollback."""
    return {e.target for e in journal.entries(ctx.engine(), cloud=cloud,
                                              key=cloud_key_of(ctx, cloud))
            if e.action in TAKEN_OUT and e.state != journal.SKIPPED}


def bmc_power(ctx: AppContext, cluster: Cluster) -> dict[str, str]:
    """Each host's power as its BMC reads it (hosts without a BMC are left out; a BMC that
    cannot be read counts as unknown)."""
    from consolidator.power.driver import read_power

    lookup = ctx.power_lookup()
    drivers = {host.name: lookup(host.name) for host in cluster.hosts}
    return {name: read_power(driver) for name, driver in drivers.items() if driver is not None}


def settled_cloud(ctx: AppContext, cloud: str) -> Inventory:
    """The live cloud once no instance is migrating: a run killed mid-migration leaves Nova
    finishing it, and a move planned from its source would be undone by it. Waits up to
    [executor] migration_timeout, saying what for; then the draft notes what still moves."""
    settings = executor_settings(ctx.config)
    deadline = time.monotonic() + settings.migration_timeout
    while True:
        inventory = read_cloud(ctx, cloud)
        moving = [i.name for i in inventory.cluster.instances if i.status == "MIGRATING"]
        if not moving or time.monotonic() > deadline:
            return inventory
        ctx.report(f"waiting for {plural(len(moving), 'live migration')} under way "
                   f"({', '.join(moving[:5])}) to end before planning the rollback")
        time.sleep(max(settings.poll_interval, 0.5))


def prepare_rollback(ctx: AppContext, snapshot_ref: str, *, partial: bool = False,
                     store: bool = True) -> PreparedRollback:
    """Read the live cloud and store the proposed plan back to the snapshot; it powers on
    only hosts consolidator powered off, and with partial moves back only what fits. Without
    store, the plan (and the live snapshot it is made from) is stored only when the
    prepared rollback's store() is called: a declined rollback leaves nothing behind."""
    engine = ctx.engine()
    target = load_snapshot(engine, snapshot_ref)
    inventory = settled_cloud(ctx, ctx.cloud_name or target.info.cloud)
    check_read_from(target.info, inventory, "roll this cloud back")
    live = inventory.cluster
    settings = settings_from_config(ctx.config)
    draft = rollback_draft(target.cluster, live, per_host_limit=settings.per_host_limit,
                           rules=replace(settings.rules, scope=None),
                           ours=taken_out_by_us(ctx, inventory.cloud), partial=partial,
                           target_id=target.info.id, bmc_power=bmc_power(ctx, live))
    if not draft.migrations and not draft.power_on:
        return PreparedRollback(target, live, draft.notes, None)
    snapshot_id, store_snapshot = inventory_to_store(ctx, inventory,
                                                     source_suffix=" (before rollback)")
    now = datetime.now(timezone.utc)
    shown = StoredPlan(id=str(uuid.uuid4()), cloud=inventory.cloud, snapshot_id=snapshot_id,
                       status="proposed", created_at=now, updated_at=now, reason=None,
                       draft=draft)

    def stored() -> StoredPlan:
        snapshot = store_snapshot()
        plan = save_plan(engine, draft, cloud=snapshot.info.cloud,
                         snapshot_id=snapshot.info.id, plan_id=shown.id)
        notify(ctx, "plan.proposed", plan=plan)
        return plan

    if store:
        return PreparedRollback(target, live, draft.notes, stored())
    return PreparedRollback(target, live, draft.notes, shown, store=stored)


def interrupted_rollback(ctx: AppContext, snapshot_ref: str) -> StoredPlan:
    """The newest rollback plan to this snapshot that a crash, a signal or a failure left
    running or failed: what 'rollback --resume' continues."""
    engine = ctx.engine()
    target = load_snapshot(engine, snapshot_ref)
    for row in list_plans(engine, status=None, limit=1000):
        if row.algorithm != "rollback" or row.status not in ("running", "failed",
                                                             "interrupted"):
            continue
        plan = load_plan(engine, row.id)
        if plan.draft.options.get("target_snapshot") == target.info.id:
            return plan
    raise UsageError(f"no interrupted rollback to snapshot {target.info.id}: start one with "
                     f"'consolidator rollback {target.info.id}'")


def refuse_while_running(ctx: AppContext, snapshot_ref: str) -> None:
    """LeaseHeldError while another executor holds the lease of the snapshot's cloud."""
    refuse_while_executor_runs(ctx, ctx.cloud_name or
                               load_snapshot(ctx.engine(), snapshot_ref).info.cloud)


#: Runs a stored plan: (the context, the plan's id, resume) -> its outcome.
RunPlan = Callable[[AppContext, str, bool], "Outcome"]


@dataclass(frozen=True)
class RollbackRun:
    """The rollback plan that ran and its outcome; both None when nothing was to do."""

    plan_id: str | None = None
    outcome: Outcome | None = None


def roll_back(ctx: AppContext, snapshot_ref: str, *, partial: bool, resume: bool,
              dry_run: bool, show: Callable[[PreparedRollback], None],
              confirm: Callable[[str], bool], run: RunPlan) -> RollbackRun:
    """Put the cloud back as a snapshot recorded it, or continue the interrupted rollback to
    it (resume); a dry run works on a scratch database and a simulated cloud. show() is
    given the prepared rollback; confirm() is asked before a real run."""
    if not dry_run:    # before anything is stored or shown (a dry run's context checks it)
        refuse_while_running(ctx, snapshot_ref)
    if resume:
        plan = interrupted_rollback(ctx, snapshot_ref)
        why = overtaken(ctx, plan.id)      # the rule 'apply --resume' and the daemon follow
        if why is not None:
            raise UsageError(f"rollback plan {plan.id} is not resumed: it was {why}; start a "
                             f"new one with 'consolidator rollback {snapshot_ref}'")
        return RollbackRun(plan.id, run(ctx, plan.id, True))
    if dry_run:    # a scratch database and a simulated cloud: nothing is stored or changed
        ctx = dry_rollback_context(ctx, snapshot_ref)
    # stored once confirmed: a declined rollback leaves no snapshot and no plan behind
    prepared = prepare_rollback(ctx, snapshot_ref, partial=partial, store=dry_run)
    show(prepared)
    if prepared.plan is None:
        return RollbackRun()
    target, plan_id = prepared.target.info.id, prepared.plan.id
    if not dry_run and not confirm(f"roll back to snapshot {target} now?"):
        raise UsageError("not confirmed")
    if prepared.store is not None:
        plan_id = prepared.store().id
    approve(ctx, plan_id, reason=f"rollback to snapshot {target}")
    try:
        outcome = run(ctx, plan_id, False)
    except LeaseHeldError:
        # nothing ran: leave no approved rollback plan behind
        cancel(ctx, plan_id, reason="refused: another executor holds the cloud's lease")
        raise
    return RollbackRun(plan_id, outcome)
