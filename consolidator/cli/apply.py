"""consolidator apply / rollback: run plans against the live cloud through the executor."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click

from consolidator.cli.context import AppContext, pass_app
from consolidator.cloud import cloud_label, connect
from consolidator.errors import ConsolidatorError, UsageError
from consolidator.executor import Executor, ExecutorSettings, Outcome, Reporter
from consolidator.inventory import read_inventory
from consolidator.model import Cluster
from consolidator.nova import Nova
from consolidator.plan_config import settings_from_config
from consolidator.plan_view import render_plan
from consolidator.render import table
from consolidator.rollback import rollback_draft
from consolidator.store.plans import load_plan, save_plan, set_status
from consolidator.store.snapshots import Snapshot, load_snapshot, save_snapshot

BMC_FILE = click.option("--bmc-file", envvar="CONSOLIDATOR_BMC_FILE", metavar="FILE",
                        help="BMC credentials [env: CONSOLIDATOR_BMC_FILE; default: [power] "
                             "bmc_file, /etc/consolidator/bmc.yaml].")


def power_lookup(app: AppContext, bmc_file: str | None):  # noqa: ANN201 - a PowerLookup
    """host name -> its PowerDriver, from the BMC file (None for hosts it does not list)."""
    from consolidator.power.base import driver_for, load_bmc_file

    path = bmc_file or app.config.get("power", "bmc_file")
    configs = {} if not bmc_file and not Path(path).exists() else load_bmc_file(path)
    drivers: dict = {}

    def lookup(host: str):  # noqa: ANN202
        if host not in configs:
            return None
        if host not in drivers:
            drivers[host] = driver_for(configs[host])
        return drivers[host]
    return lookup


def executor_settings(app: AppContext, max_parallel: int | None, dry_run: bool
                      ) -> ExecutorSettings:
    """The [executor] settings, with the command line's overrides."""
    config = app.config
    return ExecutorSettings(
        max_parallel=max_parallel or config.get("executor", "max_parallel"),
        migration_timeout=config.get("executor", "migration_timeout"),
        poll_interval=config.get("executor", "poll_interval"),
        power_timeout=config.get("executor", "power_timeout"),
        lease_ttl=config.get("executor", "lease_ttl"), dry_run=dry_run)


@contextmanager
def stop_on_signals(executor: Executor) -> Iterator[None]:
    """SIGINT/SIGTERM: start nothing new, let running migrations end, then stop."""
    def handler(signum: int, _frame: object) -> None:
        click.echo(f"\n{signal.Signals(signum).name}: starting nothing new; waiting for the "
                   f"running actions to finish or time out", err=True)
        executor.stop.set()
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _report(line: str) -> None:
    click.echo(line, err=True)


def run_plan(app: AppContext, plan_id: str, *, bmc_file: str | None, max_parallel: int | None,
             dry_run: bool, resume: bool, report: Reporter = _report) -> Outcome:
    """Run a stored plan with the executor and print its summary."""
    engine = app.engine()
    plan = load_plan(engine, plan_id)
    conn = connect(app.cloud_name or plan.cloud)
    cluster = load_snapshot(engine, plan.snapshot_id).cluster
    executor = Executor(engine, Nova(conn), plan.cloud, cluster,
                        executor_settings(app, max_parallel, dry_run),
                        power_lookup(app, bmc_file), report=report)
    with stop_on_signals(executor):
        outcome = executor.run(plan, resume=resume)
    click.echo(table(["", "COUNT"], [
        ["migrated", len(outcome.migrated)], ["failed", len(outcome.failed)],
        ["skipped", len(outcome.skipped)], ["powered on", len(outcome.powered_on)],
        ["powered off", len(outcome.powered_off)], ["hosts left on", len(outcome.left_on)]],
        align="lr"))
    for name, why in list(outcome.failed.items()) + list(outcome.skipped.items()):
        click.echo(f"  {name}: {why}")
    for host, why in outcome.left_on.items():
        click.echo(f"  {host} left on: {why}")
    return outcome


@click.command("apply")
@click.argument("plan_id")
@click.option("--yes", is_flag=True, help="Run a proposed plan without a separate approval.")
@click.option("--dry-run", is_flag=True, help="Run the pre-checks and say what would be done.")
@click.option("--max-parallel", type=click.IntRange(min=1), metavar="N",
              help="Migrations at once [default: [executor] max_parallel, 4].")
@click.option("--resume", is_flag=True,
              help="Continue a plan that a crash or a signal interrupted.")
@BMC_FILE
@pass_app
def apply_cmd(app: AppContext, plan_id: str, yes: bool, dry_run: bool,
              max_parallel: int | None, resume: bool, bmc_file: str | None) -> None:
    """Run a plan: live-migrate, disable and power off the emptied hosts, journaling it all."""
    engine = app.engine()
    plan = load_plan(engine, plan_id)
    if resume:
        if plan.status not in ("running", "failed"):
            raise UsageError(f"plan {plan.id} is {plan.status}: only a running or failed plan "
                             f"can be resumed")
    elif plan.status == "proposed":
        if not yes and not dry_run:
            raise UsageError(f"plan {plan.id} is proposed, not approved: run 'consolidator plan "
                             f"approve {plan.id}' first, or give --yes")
        if not dry_run:
            set_status(engine, plan.id, "approved", reason="approved by apply --yes")
    elif plan.status != "approved":
        hint = " (resume it with --resume)" if plan.status in ("running", "failed") else ""
        raise UsageError(f"plan {plan.id} is {plan.status}: it cannot be applied{hint}")
    outcome = run_plan(app, plan.id, bmc_file=bmc_file, max_parallel=max_parallel,
                       dry_run=dry_run, resume=resume)
    if not outcome.ok:
        raise ConsolidatorError(f"plan {plan.id} did not finish: see the summary above and "
                                f"'consolidator journal --plan {plan.id}'")


@dataclass(frozen=True)
class PreparedRollback:
    """A stored rollback plan (None when the cloud already matches) and what it came from."""

    target: Snapshot
    live: Cluster
    notes: tuple[str, ...]
    plan_id: str | None


def prepare_rollback(app: AppContext, snapshot_id: str) -> PreparedRollback:
    """Read the live cloud and store the proposed plan that puts it back as the snapshot was."""
    engine = app.engine()
    target = load_snapshot(engine, snapshot_id)
    conn = connect(app.cloud_name or target.info.cloud)
    live = read_inventory(conn).cluster
    draft = rollback_draft(target.cluster, live,
                           per_host_limit=settings_from_config(app.config).per_host_limit)
    if not draft.migrations and not draft.power_on:
        return PreparedRollback(target, live, draft.notes, None)
    label = cloud_label(conn) if app.cloud_name else target.info.cloud
    live_id = save_snapshot(engine, live, cloud=label, source=f"cloud:{label} (before rollback)")
    plan_id = save_plan(engine, draft, cloud=label, snapshot_id=live_id)
    return PreparedRollback(target, live, draft.notes, plan_id)


@click.command("rollback")
@click.argument("snapshot_id")
@click.option("--yes", is_flag=True, help="Run the rollback plan without asking.")
@click.option("--dry-run", is_flag=True, help="Show the rollback plan and its pre-checks only.")
@click.option("--max-parallel", type=click.IntRange(min=1), metavar="N")
@BMC_FILE
@pass_app
def rollback_cmd(app: AppContext, snapshot_id: str, yes: bool, dry_run: bool,
                 max_parallel: int | None, bmc_file: str | None) -> None:
    """Put the cloud back as a snapshot recorded it: power on, enable, migrate back."""
    engine = app.engine()
    prepared = prepare_rollback(app, snapshot_id)
    for note in prepared.notes:
        click.echo(f"note: {note}", err=True)
    target, plan_id = prepared.target, prepared.plan_id
    if plan_id is None:
        click.echo(f"the cloud already matches snapshot {target.info.id}: nothing to do")
        return
    click.echo(render_plan(load_plan(engine, plan_id), prepared.live, approve_hint=False))
    if not yes and not dry_run and not click.confirm(
            f"roll back to snapshot {target.info.id} now?", default=False):
        raise click.exceptions.Abort()
    if not dry_run:
        set_status(engine, plan_id, "approved", reason=f"rollback to snapshot {target.info.id}")
    outcome = run_plan(app, plan_id, bmc_file=bmc_file, max_parallel=max_parallel,
                       dry_run=dry_run, resume=False)
    if not outcome.ok:
        raise ConsolidatorError(f"rollback plan {plan_id} did not finish: see the summary")


COMMANDS = [apply_cmd, rollback_cmd]
