"""A rollback from start to end: prepare it (or find the interrupted one), confirm, approve
and run it; the caller shows it, asks, and runs the plan under its own progress display."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from consolidator.app.context import AppContext
from consolidator.app.dry_run import dry_rollback_context
from consolidator.app.review import approve, cancel
from consolidator.app.rollback import PreparedRollback, interrupted_rollback, prepare_rollback
from consolidator.core.errors import UsageError
from consolidator.store.leases import LeaseHeldError

if TYPE_CHECKING:
    from consolidator.execution.executor import Outcome

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
    if resume:
        plan = interrupted_rollback(ctx, snapshot_ref)
        return RollbackRun(plan.id, run(ctx, plan.id, True))
    if dry_run:    # a scratch database and a simulated cloud: nothing is stored or changed
        ctx = dry_rollback_context(ctx, snapshot_ref)
    prepared = prepare_rollback(ctx, snapshot_ref, partial=partial)
    show(prepared)
    if prepared.plan is None:
        return RollbackRun()
    target, plan_id = prepared.target.info.id, prepared.plan.id
    if not dry_run and not confirm(f"roll back to snapshot {target} now?"):
        raise UsageError("not confirmed")
    approve(ctx, plan_id, reason=f"rollback to snapshot {target}")
    try:
        outcome = run(ctx, plan_id, False)
    except LeaseHeldError:
        # nothing ran: leave no approved rollback plan behind
        cancel(ctx, plan_id, reason="refused: another executor holds the cloud's lease")
        raise
    return RollbackRun(plan_id, outcome)
