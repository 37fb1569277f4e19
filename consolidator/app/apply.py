"""Running a stored plan: the one place the executor is built, for apply, rollback and the
daemon alike."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from consolidator.app.context import AppContext
from consolidator.app.dry_run import dry_context, simulated_cloud
from consolidator.app.interrupted import overtaken
from consolidator.app.leadership import refuse_while_executor_runs
from consolidator.app.notify import after_run, last_entry, migration_events, notify_status
from consolidator.app.review import refuse_a_scenario_plan
from consolidator.app.settings import executor_settings, rules_from_config
from consolidator.app.snapshots import refuse_another_cloud
from consolidator.core.errors import FourEyesError, UsageError
from consolidator.core.plan import StoredPlan
from consolidator.core.wording import state_phrase
from consolidator.execution.executor import Executor, Outcome
from consolidator.execution.progress import ProgressListener
from consolidator.openstack.connection import cloud_identity
from consolidator.openstack.nova import Nova
from consolidator.store.plans import load_plan, resolve_plan_id, set_status
from consolidator.store.snapshots import load_snapshot

if TYPE_CHECKING:
    from openstack.connection import Connection

    from consolidator.execution.executor import PowerLookup


class PlanRun:
    """One run of a stored plan through the executor; ``stop()`` starts nothing new."""

    def __init__(self, ctx: AppContext, plan_ref: str, *, max_parallel: int | None = None,
                 dry_run: bool = False, conn: Connection | None = None,
                 on_timeout: str | None = None,
                 progress: ProgressListener | None = None,
                 cloud: tuple[Any, PowerLookup] | None = None) -> None:
        """cloud: a simulated cloud's Nova and power lookup (a trace replay's), used
        instead of connecting."""
        if dry_run:
            ctx = dry_context(ctx, cloud=load_plan(ctx.engine(), plan_ref).cloud,
                              plan_ids=(resolve_plan_id(ctx.engine(), plan_ref),))
        engine = ctx.engine()
        self.plan: StoredPlan = load_plan(engine, plan_ref)
        snapshot = load_snapshot(engine, self.plan.snapshot_id)
        cluster = snapshot.cluster
        settings = executor_settings(ctx.config, max_parallel=max_parallel,
                                     on_timeout=on_timeout)
        if cloud is not None:
            nova, power = cloud
            settings = replace(settings, poll_interval=0.0)
        else:
            conn = conn if conn is not None else ctx.connect(ctx.cloud_name or self.plan.cloud)
            refuse_another_cloud(snapshot.info, cloud_identity(conn), f"run plan {self.plan.id}")
            nova, power = Nova(conn), ctx.power_lookup()
        if ctx.simulate and cloud is None:   # the same sequence, on a copy read once
            nova, power = simulated_cloud(ctx, conn, cluster)
            settings = replace(settings, poll_interval=0.0)
        self.executor = Executor(engine, nova, self.plan.cloud, cluster, settings, power,
                                 report=ctx.report, rules=rules_from_config(ctx.config))
        self.executor.progress = progress
        self.ctx = ctx

    def stop(self) -> None:
        """Start no new action; the running ones finish or time out."""
        self.executor.stop.set()

    def abort(self) -> None:
        """Start nothing new, and abort the running live migrations through Nova."""
        self.executor.stop.set()
        self.executor.abort.set()

    @property
    def running(self) -> int:
        """Live migrations in flight."""
        return self.executor.running

    def run(self, *, resume: bool = False) -> Outcome:
        """Run (or resume) the plan; it ends succeeded or failed, or stays as it was. The
        notifications tell its start, each migration, its power actions and its end
        (app/notify.py)."""
        since = last_entry(self.ctx, self.plan.id)
        self.executor.on_started = lambda: notify_status(self.ctx, self.plan.id)
        self.executor.on_migration = migration_events(self.ctx, self.plan)
        outcome = self.executor.run(self.plan, resume=resume)
        after_run(self.ctx, self.plan.id, outcome, since)
        return outcome


def check_applicable(ctx: AppContext, plan_ref: str, *, yes: bool, dry_run: bool,
                     resume: bool) -> StoredPlan:
    """The plan, once its state allows this run; a proposed plan with --yes is approved."""
    engine = ctx.engine()
    plan = load_plan(engine, plan_ref)
    refuse_a_scenario_plan(plan)
    if ctx.cloud_name and ctx.cloud_name != plan.cloud:
        raise UsageError(f"plan {plan.id} is for cloud {plan.cloud!r}, not {ctx.cloud_name!r}: "
                         f"apply it with --cloud {plan.cloud}")
    if not dry_run:     # a dry run's context refuses it itself
        refuse_while_executor_runs(ctx, plan.cloud)
    if resume:
        if plan.status not in ("running", "failed", "interrupted"):
            raise UsageError(f"plan {plan.id} {state_phrase(plan.status)}: only a running, "
                             f"failed or interrupted plan can be resumed")
        why = overtaken(ctx, plan.id)
        if why is not None:
            raise UsageError(f"plan {plan.id} is not resumed: it was {why}; make a new plan "
                             f"with 'consolidator plan'")
    elif plan.status == "proposed":
        if not yes and not dry_run:
            raise UsageError(f"plan {plan.id} is proposed, not approved: run 'consolidator plan "
                             f"approve {plan.id}' first, or give --yes")
        if not dry_run:
            _apply_unapproved(ctx, plan)
    elif plan.status != "approved":
        hint = (" (resume it with --resume)" if plan.status in ("running", "failed",
                                                                "interrupted") else "")
        raise UsageError(f"plan {plan.id} {state_phrase(plan.status)}: it cannot be applied{hint}")
    return plan


def _apply_unapproved(ctx: AppContext, plan: StoredPlan) -> None:
    """'apply --yes' of a proposed plan: refused under [review] require_approval; else
    approved, journaled as applied with nobody's approval."""
    from consolidator.app.audit import actor_of, journal_decision
    from consolidator.app.settings import review_settings

    if review_settings(ctx.config).require_approval:
        raise FourEyesError(f"plan {plan.id} is proposed, and [review] require_approval = true "
                            f"refuses to apply a plan nobody approved: have it approved with "
                            f"'consolidator plan approve {plan.id}' (by another user under "
                            f"[review] distinct_approver)")
    who = actor_of(ctx).label
    set_status(ctx.engine(), plan.id, "approved",
               reason=f"applied with --yes by {who}, nobody approved it")
    journal_decision(ctx, action="approve", cloud=plan.cloud, plan_id=plan.id, target=plan.id,
                     result=f"plan {plan.id} applied with --yes by {who}: nobody approved it",
                     params={"unapproved": True})
    notify_status(ctx, plan.id)


def apply_plan(ctx: AppContext, plan_ref: str, *, max_parallel: int | None = None,
               dry_run: bool = False, resume: bool = False) -> Outcome:
    """Run a stored plan to its end with the executor."""
    return PlanRun(ctx, plan_ref, max_parallel=max_parallel, dry_run=dry_run).run(resume=resume)
