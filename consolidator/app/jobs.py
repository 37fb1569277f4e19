"""Jobs: work asked through the API, recorded for the daemon that holds the lease, which
carries it out through the same use cases (and so the same executor and gate) as the CLI.

The API process only records a job (request_job) and reads it back (job_view); it never
reads the cloud, migrates or calls a BMC. The daemon claims the oldest queued job of its
cloud (run_next_job) and records its progress and result. A job no daemon claims within
[api] job_timeout is marked expired, saying so, and is never run late.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from consolidator.app.audit import actor_of, journal_decision
from consolidator.app.context import AppContext
from consolidator.core.actor import Actor
from consolidator.core.errors import ConsolidatorError, UsageError
from consolidator.store import jobs as store

if TYPE_CHECKING:
    from consolidator.execution.run_terms import Outcome

LOG = logging.getLogger("consolidator.jobs")

#: Every kind of job, and what its target names.
KINDS = {"snapshot": "cloud", "plan": "snapshot", "apply": "plan", "dry_run": "plan",
         "rollback": "snapshot", "drain": "hosts", "undrain": "hosts",
         "power_on": "host", "power_off": "host"}

#: A job's states, as the API lists them.
JOB_STATES = store.STATES

#: How the daemon runs a plan: plan id, resume -> its outcome.
Execute = Callable[[str, bool], "Outcome"]


def request_job(ctx: AppContext, *, cloud: str, kind: str, target: str,
                params: dict[str, Any], plan_id: str | None = None) -> store.Job:
    """Record a queued job for the daemon, and journal the request with its actor."""
    assert kind in KINDS, kind
    actor = actor_of(ctx)
    job = store.add(ctx.engine(), cloud=cloud, kind=kind, target=target, params=params,
                    requester=actor.to_json())
    journal_decision(ctx, action="api_request", cloud=cloud, plan_id=plan_id, target=target,
                     result=f"{kind} asked by {actor.label}: job {job.id}",
                     params={"job": job.id, "kind": kind, **params})
    return job


def job_view(ctx: AppContext, job_id: str, *, timeout: float) -> store.Job:
    """A job as it stands; one that waited longer than timeout is expired first."""
    store.expire_unclaimed(ctx.engine(), older_than=timeout)
    return store.get(ctx.engine(), job_id)


def job_list(ctx: AppContext, *, timeout: float, limit: int, marker: str | None,
             state: str | None) -> list[store.Job]:
    """Jobs, newest first (expired ones marked)."""
    store.expire_unclaimed(ctx.engine(), older_than=timeout)
    return store.listing(ctx.engine(), limit=limit, marker=marker, state=state)


def run_next_job(ctx: AppContext, *, cloud: str, holder: str, timeout: float,
                 execute: Execute) -> store.Job | None:
    """Claim and carry out the oldest queued job of the cloud, as its requester; the job as
    it ended, or None when none waits."""
    engine = ctx.engine()
    store.expire_unclaimed(engine, older_than=timeout)
    job = store.claim_next(engine, cloud=cloud, holder=holder)
    if job is None:
        return None
    LOG.info("job %s: %s %s, asked by %s", job.id, job.kind, job.target,
             (Actor.from_json(job.requester) or actor_of(ctx)).label)
    before = ctx.actor
    ctx.actor = Actor.from_json(job.requester)
    try:
        result = _carry_out(ctx, job, execute)
    except ConsolidatorError as exc:
        LOG.warning("job %s failed: %s", job.id, exc)
        store.finish(engine, job.id, state=store.FAILED, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a job's bug must not stop the daemon
        LOG.exception("job %s failed", job.id)
        store.finish(engine, job.id, state=store.FAILED,
                     error=f"unexpected error: {type(exc).__name__}")
    else:
        failed = isinstance(result, dict) and result.pop("failed", False)
        store.finish(engine, job.id, state=store.FAILED if failed else store.SUCCEEDED,
                     result=result, error=result.get("why") if failed else None)
    finally:
        ctx.actor = before
    return store.get(engine, job.id)


def _carry_out(ctx: AppContext, job: store.Job, execute: Execute) -> dict[str, Any]:
    """Run one job through the use cases; its result as JSON."""
    progress = partial(store.set_progress, ctx.engine(), job.id)
    p = job.params
    if job.kind == "snapshot":
        from consolidator.app.snapshots import record_snapshot

        progress("reading the cloud")
        return {"snapshot_id": record_snapshot(ctx)[0].info.id}
    if job.kind == "plan":
        return _plan(ctx, p, progress)
    if job.kind in ("apply", "dry_run"):
        return _apply(ctx, job, execute, progress)
    if job.kind == "rollback":
        from consolidator.app.rollback import roll_back

        progress(f"rolling back to snapshot {job.target}")
        done = roll_back(ctx, job.target, partial=bool(p.get("partial")), resume=False,
                         dry_run=False, show=lambda _prepared: None, confirm=lambda _q: True,
                         run=lambda _ctx, plan_id, resume: execute(plan_id, resume))
        return {"plan_id": done.plan_id, **_outcome(done.outcome)}
    if job.kind == "drain":
        return _drain(ctx, p, progress)
    if job.kind == "undrain":
        from consolidator.app.drain_hosts import undrain

        return {"lines": undrain(ctx, tuple(p["hosts"]))}
    from consolidator.app.power import power_off, power_on

    progress(f"{job.kind.replace('_', ' ')} {job.target}")
    state = power_on(ctx, job.target) if job.kind == "power_on" else \
        power_off(ctx, job.target, force=True, confirm=lambda _q: True)
    return {"host": job.target, "power": state}


def _plan(ctx: AppContext, p: dict[str, Any], progress: Callable[[str], None]
          ) -> dict[str, Any]:
    """Make a plan from the named snapshot, or from a fresh one of the live cloud."""
    from consolidator.app.planning import PlanRequest, check_scope, make_plan, validate_request
    from consolidator.app.snapshots import get_snapshot, record_snapshot

    request = PlanRequest(**{k: p[k] for k in PLAN_FIELDS if p.get(k) is not None})
    validate_request(ctx, request)
    if p.get("snapshot_id"):
        snap = get_snapshot(ctx, p["snapshot_id"])
    else:
        progress("reading the cloud")
        snap = record_snapshot(ctx, check=partial(check_scope, ctx, request))[0]
    if p.get("front"):
        from consolidator.app.front import front_of
        from consolidator.render.front import front_json

        progress(f"the front of snapshot {snap.info.id}")
        return {"snapshot_id": snap.info.id, **front_json(front_of(ctx, snap, request))}
    progress(f"planning from snapshot {snap.info.id}")
    stored = make_plan(ctx, snap, request)
    return {"plan_id": stored.id, "snapshot_id": snap.info.id}


#: The plan choices a job may carry, as PlanRequest names them.
PLAN_FIELDS = ("algorithm", "ranking", "spare", "capacity_model", "confidence", "options",
               "max_migrations", "max_moved_gib", "target_hosts", "objective", "scope")


def _apply(ctx: AppContext, job: store.Job, execute: Execute,
           progress: Callable[[str], None]) -> dict[str, Any]:
    """Apply (or dry-run) an approved plan; never approves one itself."""
    from consolidator.app.apply import apply_plan, check_applicable

    dry = job.kind == "dry_run"
    plan = check_applicable(ctx, job.target, yes=False, dry_run=dry, resume=False)
    if plan.status == "proposed" and not dry:
        raise UsageError(f"plan {plan.id} is proposed, not approved: approve it first")
    progress(f"{'dry run of' if dry else 'running'} plan {plan.id}")
    outcome = apply_plan(ctx, plan.id, dry_run=True) if dry else execute(plan.id, False)
    return {"plan_id": plan.id, **_outcome(outcome)}


def _drain(ctx: AppContext, p: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Store the drain plan, proposed, for review and approval (as 'hosts drain' without
    --yes)."""
    from consolidator.app.drain_hosts import DrainRequest, plan_drain

    progress("planning the drain")
    stored, _ = plan_drain(ctx, DrainRequest(hosts=tuple(p.get("hosts") or ()),
                                             aggregate=p.get("aggregate"),
                                             power_off=bool(p.get("power_off"))))
    return {"plan_id": stored.id}


def _outcome(outcome: Outcome | None) -> dict[str, Any]:
    """A run's outcome as JSON; failed when it did not do everything."""
    if outcome is None:
        return {"migrated": 0, "note": "nothing to do"}
    result: dict[str, Any] = {
        "migrated": len(outcome.migrated), "failed_migrations": dict(outcome.failed),
        "skipped": dict(outcome.skipped), "powered_off": list(outcome.powered_off),
        "powered_on": list(outcome.powered_on), "left_on": dict(outcome.left_on),
        "stopped": outcome.stopped}
    if not outcome.ok:
        result.update(failed=True, why=outcome.stopped or "the run did not do everything the "
                                                          "plan asked: see the result")
    return result
