"""Dry runs: the executor's own sequence on a simulated copy of the live state, with a
throw-away copy of the database, so that a dry run neither changes nor stores anything and
passes exactly when the real run would."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from consolidator.app.context import AppContext
from consolidator.app.leadership import refuse_while_executor_runs
from consolidator.app.settings import executor_settings
from consolidator.core.wording import plural
from consolidator.execution.simulated_cloud import SimulatedNova, simulated_power
from consolidator.openstack.nova import Nova
from consolidator.store.plans import load_plan, set_status
from consolidator.store.scratch import scratch_copy

if TYPE_CHECKING:
    from consolidator.core.model import Cluster
    from consolidator.execution.executor import Outcome, PowerLookup


def dry_context(ctx: AppContext, *, cloud: str, plan_ids: tuple[str, ...] = (),
                snapshot_ids: tuple[str, ...] = ()) -> AppContext:
    """A context like ctx whose database is a scratch copy of what the run reads (the plans,
    their snapshots, the cloud's journal) and whose runs are simulated; refused, as the real
    run would be, while another executor holds the cloud's lease."""
    if ctx.simulate:
        return ctx
    engine = ctx.engine()
    refuse_while_executor_runs(ctx, cloud)
    window = executor_settings(ctx.config).low_demand_window   # the demand samples it reads
    since = datetime.now(timezone.utc) - timedelta(minutes=window) if window > 0 else None
    scratch = scratch_copy(engine, cloud=cloud, plan_ids=plan_ids, snapshot_ids=snapshot_ids,
                           since=since)
    for plan_id in plan_ids:     # as 'apply --yes' would
        if load_plan(scratch, plan_id).status == "proposed":
            set_status(scratch, plan_id, "approved", reason="approved for a dry run")
    return replace(ctx, _config=ctx.config, _engine=scratch, _migrated=False, simulate=True)


def simulated_cloud(ctx: AppContext, conn: object, cluster: Cluster
                    ) -> tuple[SimulatedNova, PowerLookup]:
    """The executor's Nova and BMCs on a copy of the live state, read once from `conn`."""
    nova = SimulatedNova(Nova(conn), cluster)   # type: ignore[arg-type]
    return nova, simulated_power(ctx.power_lookup(), nova)


def dry_rollback_context(ctx: AppContext, snapshot_ref: str) -> AppContext:
    """The dry-run context of a rollback to a snapshot (see dry_context)."""
    from consolidator.store.snapshots import load_snapshot

    target = load_snapshot(ctx.engine(), snapshot_ref).info
    return dry_context(ctx, cloud=ctx.cloud_name or target.cloud, snapshot_ids=(target.id,))


def verdict(plan_id: str, outcome: Outcome, *, rollback: bool = False) -> str:
    """What a dry run found, in one line: the real run would succeed, or why not."""
    what = f"{'rollback ' if rollback else ''}plan {plan_id}"
    if outcome.ok:
        return (f"dry run: {what} would succeed ({plural(len(outcome.migrated), 'migration')}, "
                f"{len(outcome.powered_on)} powered on, {len(outcome.powered_off)} powered "
                f"off); nothing was changed or stored")
    first = next(iter({**outcome.failed, **outcome.skipped, **outcome.left_on}.items()),
                 ("", outcome.stopped))
    return (f"dry run: {what} would not finish: {len(outcome.skipped)} skipped, "
            f"{len(outcome.failed)} failed, {plural(len(outcome.left_on), 'host')} left on "
            f"(first: {first[0]}: {first[1]}); nothing was changed or stored")
