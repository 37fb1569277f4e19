"""Notifications: each event of a plan's life (proposed, approved, started, succeeded,
failed, cancelled), each live migration (started, succeeded, failed), each power action and
rescue of a run or of 'hosts power', and each drained or undrained host, POSTed to [notify]
webhook_url (telemetry/webhook.py: CloudEvents, or the legacy format) and sent as versioned
notifications on [notify] transport_url's bus (telemetry/versioned.py, telemetry/bus.py).

Every event is first journaled (action ``notify``, the event as target); the journal row's id
is the event's sequence number, so numbers only grow, across processes and restarts, and the
row records whether the delivery succeeded. The event then leaves from the context's outbox
(app/outbox.py), outside the executor lease, each delivery within [notify] deadline. Delivery
never fails or holds the operation: a webhook receiver that is down gets the retries, one
that is stuck loses the event; a broker that is down gets the event again once it is back,
while at most [notify] queue_size events wait; the journal row, the log and
consolidator_notifications_dropped_total say what was lost. Dry runs notify nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from consolidator.app.context import AppContext
from consolidator.app.notify_sinks import Sinks
from consolidator.app.settings import notify_settings
from consolidator.core.errors import ConsolidatorError
from consolidator.core.plan import Move, StoredPlan
from consolidator.store import journal, totals
from consolidator.store.plans import load_plan

if TYPE_CHECKING:
    from consolidator.core.journal_entry import Entry
    from consolidator.execution.executor import Outcome
    from consolidator.execution.progress import MigrationListener

LOG = logging.getLogger(__name__)

#: The journal actions of a run that are power actions, and their event names.
POWER_EVENTS = {"power_off": "power.off", "power_on": "power.on"}


def plan_kind(plan: StoredPlan) -> str:
    """What a plan is for: consolidation, drain, rollback or ramp."""
    if plan.draft.drain:
        return "drain"
    return plan.draft.algorithm if plan.draft.algorithm in ("rollback", "ramp") \
        else "consolidation"


def notify(ctx: AppContext, event: str, *, plan: StoredPlan | None = None,
           plan_id: str | None = None, **fields: Any) -> None:
    """Journal one event and POST it to the webhook, if one is configured; never raises."""
    if not notifying(ctx):
        return
    document: dict[str, Any] = {"event": event, "plan_id": plan.id if plan else plan_id,
                                "time": datetime.now(timezone.utc).isoformat()}
    if plan is not None:
        document.update(cloud=plan.cloud, kind=plan_kind(plan), status=plan.status,
                        reason=plan.reason, algorithm=plan.draft.algorithm,
                        migrations=len(plan.draft.migrations),
                        power_off=list(plan.draft.power_off),
                        power_on=list(plan.draft.power_on), drain=list(plan.draft.drain))
    document.setdefault("cloud", ctx.cloud_name or "default")
    document.update(fields)
    try:
        engine = ctx.engine()
        entry = journal.begin(engine, cloud=document["cloud"], plan_id=document["plan_id"],
                              action="notify", target=event, params=dict(document))
    except ConsolidatorError as exc:   # the database: the operation goes on regardless
        ctx.report(f"notification {event}: not sent: {exc}")
        return
    document["sequence"] = entry
    outbox_of(ctx).put(entry, document)


def notifying(ctx: AppContext) -> bool:
    """Whether events go anywhere: a webhook or a bus is configured, and this is no dry run."""
    settings = notify_settings(ctx.config)
    return bool(settings.webhook_url or settings.transport_url) and not ctx.simulate


def outbox_of(ctx: AppContext) -> Sinks:
    """The context's outboxes, made (and their threads started) at the first event."""
    if ctx.outbox is None:
        engine = ctx.engine()

        def finish(entry: int, delivered: bool, detail: str) -> None:
            journal.finish(engine, entry, journal.SUCCEEDED if delivered else journal.FAILED,
                           detail)

        def dropped(reason: str) -> None:
            totals.add(engine, "notifications_dropped_total", {"reason": reason})

        ctx.outbox = Sinks(notify_settings(ctx.config), finish, dropped)
    return ctx.outbox


def migration_events(ctx: AppContext, plan: StoredPlan) -> MigrationListener | None:
    """What notifies each live migration's start and end (None: nothing is notified)."""
    if not notifying(ctx):
        return None
    from consolidator.execution import progress as mp

    outbox_of(ctx)          # made here, not by the first of several migration threads
    states = {mp.STARTED: "started", mp.DONE: "succeeded", mp.FAILED: "failed"}

    def listener(move: Move, phase: str, elapsed: float, error: str | None) -> None:
        state = states[phase]
        try:
            notify(ctx, f"migration.{state}", plan_id=plan.id, cloud=plan.cloud,
                   instance_id=move.instance_id, instance_name=move.instance_name,
                   source=move.source, destination=move.destination, wave=move.wave,
                   state=state, elapsed_s=round(elapsed, 3),
                   result=None if state == "started" else error or (
                       f"on {move.destination} after {elapsed:.1f} s"))
        except Exception as exc:  # noqa: BLE001 - a notification never fails a migration
            LOG.warning("notification migration.%s of %s: %s", state, move.instance_name, exc)
    return listener


def notify_status(ctx: AppContext, plan_id: str) -> None:
    """The event of a plan's current state (plan.approved, plan.started for running,
    plan.cancelled...)."""
    if not notifying(ctx):
        return
    plan = load_plan(ctx.engine(), plan_id)
    notify(ctx, f"plan.{'started' if plan.status == 'running' else plan.status}", plan=plan)


def last_entry(ctx: AppContext, plan_id: str) -> int:
    """The id of a plan's newest journal row (0: none): where a run's rows start after."""
    if not notifying(ctx):
        return 0
    rows = journal.entries(ctx.engine(), plan_id=plan_id)
    return rows[-1].id if rows else 0


def journal_mark(ctx: AppContext) -> int:
    """The id of the journal's newest row (0: none, or nothing is notified): where the rows
    of an action outside a plan start after."""
    return journal.last_id(ctx.engine()) if notifying(ctx) else 0


def power_row_events(ctx: AppContext, rows: list[Entry], plan_id: str | None) -> None:
    """The event of each ended power action and rescue among journal rows, in their order."""
    for row in rows:
        if row.action in POWER_EVENTS and row.state != journal.RUNNING:
            rescue = bool((row.params or {}).get("rescue"))
            notify(ctx, "host.rescued" if rescue else POWER_EVENTS[row.action],
                   plan_id=plan_id, host=row.target, state=row.state, result=row.result,
                   reason=(row.params or {}).get("why") if rescue else None)


def rescues_after(ctx: AppContext, since: int, holder: str) -> None:
    """The host.rescued event of each rescue journaled outside a plan after row `since`
    under the lease holder `holder` (an operator's 'hosts power off')."""
    if not notifying(ctx):
        return
    rows = journal.entries(ctx.engine(), actions=("power_on",), after=since)
    power_row_events(ctx, [r for r in rows if r.plan_id is None and r.lease_holder == holder
                           and (r.params or {}).get("rescue")], None)


def after_run(ctx: AppContext, plan_id: str, outcome: Outcome, since: int) -> None:
    """The events of a run that has ended: its power actions and rescues (from its journal
    rows after `since`), the hosts a drain emptied, then the plan's final state."""
    if not notifying(ctx):
        return
    engine = ctx.engine()
    power_row_events(ctx, journal.entries(engine, plan_id=plan_id, after=since), plan_id)
    plan = load_plan(engine, plan_id)
    if plan.status == "succeeded":
        from consolidator.core.maintenance import drain_reason

        for host in plan.draft.drain:
            notify(ctx, "host.drained", plan_id=plan.id, host=host,
                   powered_off=host in outcome.powered_off, reason=drain_reason(plan.id))
    if plan.status in ("succeeded", "failed"):
        notify(ctx, f"plan.{plan.status}", plan=plan)
