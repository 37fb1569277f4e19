"""Plans a crash left running: which the daemon may resume, and marking the others
interrupted (core/overtaken.py decides)."""

from __future__ import annotations

from typing import Any

from consolidator.app.cloud_key import cloud_key_of
from consolidator.app.context import AppContext
from consolidator.core.journal_entry import DECISIONS
from consolidator.core.overtaken import OperatorAction, PlanMark, why_not_resume
from consolidator.store import journal
from consolidator.store.plans import list_plans, set_status

#: How many of the cloud's newest plans are looked at for one that overtook a running plan.
RECENT_PLANS = 500


def triage_running(ctx: AppContext, cloud: str | None, *, auto_apply: bool
                   ) -> list[tuple[str, str | None]]:
    """Each plan of the cloud left running, oldest first, with why the daemon must not
    resume it (None: resume it). An operator's action under any clouds.yaml name of the
    cloud counts."""
    rows = list_plans(ctx.engine(), cloud=cloud or None, status=None, limit=RECENT_PLANS)
    running = [r for r in reversed(rows) if r.status == "running"]
    if not running:
        return []
    key = cloud_key_of(ctx, cloud) if cloud else None
    operator = [(e.cloud, e.cloud_key, OperatorAction(e.action, e.target, e.created_at))
                for e in journal.entries(ctx.engine(), cloud=cloud or None, key=key)
                if e.plan_id is None and e.state != journal.SKIPPED
                and e.action not in DECISIONS]
    return [(r.id, why_not_resume(_mark(r), [_mark(o) for o in rows if o.cloud == r.cloud],
                                  [a for c, k, a in operator
                                   if c == r.cloud or (key is not None and k == key)],
                                  auto_apply=auto_apply))
            for r in running]


def overtaken(ctx: AppContext, plan_id: str) -> str | None:
    """Why an interrupted plan may not be resumed by hand either: a rollback, a cancel, a
    newer plan or an operator's power command since it last ran (the daemon's own rule,
    core/overtaken.py); None if nothing overtook it."""
    rows = list_plans(ctx.engine(), cloud=None, status=None, limit=RECENT_PLANS)
    mine = next((r for r in rows if r.id == plan_id), None)
    if mine is None:
        return None
    operator = [OperatorAction(e.action, e.target, e.created_at)
                for e in journal.entries(ctx.engine(), cloud=mine.cloud,
                                         key=cloud_key_of(ctx, mine.cloud))
                if e.plan_id is None and e.state != journal.SKIPPED
                and e.action not in DECISIONS]
    return why_not_resume(_mark(mine), [_mark(o) for o in rows if o.cloud == mine.cloud],
                          operator, auto_apply=True)


def _mark(row: Any) -> PlanMark:
    return PlanMark(row.id, row.algorithm, row.status, row.created_at, row.updated_at)


def mark_interrupted(ctx: AppContext, plan_id: str, why: str) -> str:
    """Mark a plan left running as interrupted, with why and what the operator can do; the
    reason as stored."""
    reason = (f"interrupted and not resumed: {why}; resume it with 'consolidator apply "
              f"--resume {plan_id}', or cancel it")
    set_status(ctx.engine(), plan_id, "interrupted", reason=reason)
    return reason
