"""Reviewing stored plans: show, list, approve, cancel, and the journal of what was done."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from consolidator.app.context import AppContext
from consolidator.app.notify import notify, notify_status
from consolidator.app.snapshots import store_inventory
from consolidator.core.actor import Actor
from consolidator.core.errors import FourEyesError, UsageError
from consolidator.core.journal_entry import ACTIONS, Entry
from consolidator.core.model import Cluster
from consolidator.core.plan import PlanDraft, StoredPlan
from consolidator.render.asked import asked_for
from consolidator.store import journal
from consolidator.store import plans as stored
from consolidator.store.snapshots import load_snapshot

if TYPE_CHECKING:
    from consolidator.openstack.inventory import Inventory


def show_plan(ctx: AppContext, ref: str) -> tuple[StoredPlan, Cluster]:
    """A stored plan and the cluster of the snapshot it was made from."""
    engine = ctx.engine()
    plan = stored.load_plan(engine, ref)
    return plan, load_snapshot(engine, plan.snapshot_id).cluster


def list_plans(ctx: AppContext, *, status: str | None, limit: int) -> list[Any]:
    """Plan header rows, newest first."""
    return stored.list_plans(ctx.engine(), status=status, limit=limit)


def asked_row(row: Any) -> str:
    """What a listed plan was asked for: algorithm, ranking and options as flags."""
    details = row.details or {}
    return asked_for(row.algorithm, row.ranking, details.get("options") or {},
                     details.get("choice"))


def from_a_scenario(plan: StoredPlan) -> str | None:
    """Why the plan cannot be applied when it was made from a scenario file (it names no
    live cloud), else None."""
    if not plan.cloud.startswith("scenario:"):
        return None
    return (f"was made from a scenario file ({plan.cloud}), not from a live cloud: it can be "
            f"reviewed, not applied")


def refuse_a_scenario_plan(plan: StoredPlan) -> None:
    """UsageError when the plan was made from a scenario file (from_a_scenario)."""
    why = from_a_scenario(plan)
    if why is not None:
        raise UsageError(f"plan {plan.id} {why}")


def approved_line(ctx: AppContext, full: str, changed: bool) -> str:
    """What 'plan approve' says: how to run the plan, or, for a plan made from a scenario
    file (which apply refuses), that it can be reviewed, not applied."""
    why = from_a_scenario(stored.load_plan(ctx.engine(), full))
    done = f"plan {full} {'approved' if changed else 'was already approved'}"
    return f"{done}; it {why}" if why else f"{done}; run it with: consolidator apply {full}"


def change_status(ctx: AppContext, ref: str, status: str) -> tuple[str, bool]:
    """Move a plan (id or unique prefix) to a new state by the operator: its full id, and
    False when it already was in that state (approving or cancelling twice is no error).
    Approving and cancelling are journaled with the actor; with [review] distinct_approver
    the plan's maker cannot approve it (FourEyesError)."""
    from consolidator.app.audit import actor_of, journal_decision
    from consolidator.app.settings import review_settings

    engine = ctx.engine()
    full = stored.resolve_plan_id(engine, ref)
    plan = stored.load_plan(engine, full)
    if status in ("approved", "cancelled") and plan.status == status:
        return full, False
    actor = actor_of(ctx)
    if status == "approved" and review_settings(ctx.config).distinct_approver:
        maker = Actor.from_json(stored.creator(engine, full))
        if maker is None or actor.same_user(maker):
            who = "you made it" if maker is not None else "nobody is recorded as its maker"
            raise FourEyesError(f"plan {full} cannot be approved by {actor.label}: {who}, "
                                f"and [review] distinct_approver = true asks another user "
                                f"to approve it")
    verb = "approved" if status == "approved" else "cancelled"
    stored.set_status(engine, full, status, reason=f"{verb} by {actor.label}")
    if status in ("approved", "cancelled"):
        journal_decision(ctx, action="approve" if status == "approved" else "cancel",
                         cloud=plan.cloud, plan_id=full, target=full,
                         result=f"plan {full} {verb} by {actor.label}")
    notify_status(ctx, full)
    return full, True


def journal_entries(ctx: AppContext, *, plan_ref: str | None, limit: int,
                    host: str | None = None, since: datetime | None = None,
                    actions: tuple[str, ...] = ()) -> list[Entry]:
    """The newest journal rows, oldest first, of one plan or of all; only those that
    concern a host (its target, or a migration's source or destination), created since a
    time, of some actions, when asked."""
    engine = ctx.engine()
    known = {*ACTIONS, *journal.actions_seen(engine)} if actions else set()
    unknown = [a for a in actions if a not in known]
    if unknown:
        raise UsageError(f"unknown journal action {unknown[0]!r}: choose from "
                         f"{', '.join(sorted(known))}")
    full = stored.resolve_plan_id(engine, plan_ref) if plan_ref else None
    rows = journal.entries(engine, plan_id=full, since=since, actions=actions)
    if host:
        rows = [e for e in rows if host in e.hosts]
    return rows[-limit:]


def approve(ctx: AppContext, plan_id: str, reason: str, *, supersede: bool = True) -> None:
    """Approve a plan for a reason other than the operator's word (auto_apply, rollback);
    unless told not to, the cloud's other proposed plans are superseded."""
    stored.set_status(ctx.engine(), plan_id, "approved", reason=reason, supersede=supersede)
    notify_status(ctx, plan_id)


def cancel(ctx: AppContext, plan_id: str, reason: str) -> None:
    """Cancel a plan that has not started, for a reason other than the operator's word."""
    stored.set_status(ctx.engine(), plan_id, "cancelled", reason=reason)
    notify_status(ctx, plan_id)


def plan_counts(ctx: AppContext) -> dict[str, int]:
    """How many plans are in each state."""
    return stored.count_by_status(ctx.engine())


def power_on_plan(ctx: AppContext, inventory: Inventory, hosts: list[str], target: int,
                  why: str = "") -> StoredPlan:
    """Store and approve a plan that powers hosts on for the padding (the morning ramp and
    the capacity watch) or `why`; it supersedes nothing."""
    live = inventory.cluster
    powered = sum(h.state == "up" and h.power != "off" for h in live.hosts)
    snapshot = store_inventory(ctx, inventory)
    draft = PlanDraft(algorithm="ramp", ranking=None, migrations=(), power_off=(),
                      power_on=tuple(hosts), hosts_before=powered,
                      hosts_after=powered + len(hosts), lower_bound=0,
                      migrations_lower_bound=0, spare=target,
                      notes=(why or f"padding target {target}",))
    plan = stored.save_plan(ctx.engine(), draft, cloud=snapshot.info.cloud,
                            snapshot_id=snapshot.info.id, supersede=False)
    notify(ctx, "plan.proposed", plan=plan)
    approve(ctx, plan.id, reason="padding", supersede=False)
    return plan
