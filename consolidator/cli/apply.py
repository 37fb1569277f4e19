"""consolidator apply / rollback: run plans against the live cloud through the executor."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from consolidator.app.apply import PlanRun, check_applicable
from consolidator.app.context import AppContext
from consolidator.app.dry_run import verdict
from consolidator.app.freshness import check_fresh
from consolidator.app.rollback import PreparedRollback, roll_back
from consolidator.app.snapshots import get_snapshot
from consolidator.cli.context import BMC_FILE, pass_app, terminal_width
from consolidator.cli.progress import live_progress
from consolidator.core.errors import ConsolidatorError
from consolidator.core.wording import plural
from consolidator.render.outcome import final_line, summary_table
from consolidator.render.plan import render_plan

if TYPE_CHECKING:
    from consolidator.app.apply import Outcome


@contextmanager
def stop_on_signals(run: PlanRun, app: AppContext) -> Iterator[None]:
    """SIGINT/SIGTERM: start nothing new and let the running migrations end, said at once
    (the command then ends without waiting for its queued notifications); a second one
    aborts them through Nova."""
    signals = []
    say = app.report

    def handler(signum: int, _frame: object) -> None:
        signals.append(signum)
        app.signalled = True
        name, running = signal.Signals(signum).name, plural(run.running, "running migration")
        if len(signals) == 1:
            run.stop()
            say(f"{name}: starting nothing new; waiting for {running}; Ctrl-C again to "
                f"abort them")
        else:
            run.abort()
            say(f"{name} again: aborting {running} through Nova")
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_and_summarise(app: AppContext, plan_id: str, *, max_parallel: int | None,
                      dry_run: bool, resume: bool, on_timeout: str | None = None,
                      kind: str = "plan") -> Outcome:
    """Run a stored plan under the signal handlers and print its summary."""
    started = time.monotonic()
    with live_progress(app) as progress:
        run = PlanRun(app, plan_id, max_parallel=max_parallel, dry_run=dry_run,
                      on_timeout=on_timeout, progress=progress)
        with stop_on_signals(run, app):
            outcome = run.run(resume=resume)
    click.echo(summary_table(outcome))
    for name, why in list(outcome.failed.items()) + list(outcome.skipped.items()):
        click.echo(f"  {name}: {why}")
    for host, why in outcome.left_on.items():
        click.echo(f"  {host} left on: {why}")
    for host, why in outcome.not_on.items():
        click.echo(f"  {host} NOT on: {why}")
    for host, why in run.plan.draft.left_on.items():
        click.echo(f"  {host} left on as planned: {why}")
    click.echo(final_line(kind, plan_id, outcome, time.monotonic() - started, dry_run=dry_run))
    return outcome


def dry_run_verdict(plan_id: str, outcome: Outcome, *, rollback: bool = False) -> None:
    """Say what a dry run found; exit non-zero, in one line, when the real run would fail."""
    line = verdict(plan_id, outcome, rollback=rollback)
    if not outcome.ok:
        raise ConsolidatorError(line)
    click.echo(line)


def show_rollback(prepared: PreparedRollback, *, dry_run: bool = False) -> None:
    """Print a prepared rollback's notes, and its plan or that there is nothing to do (a dry
    run's plan is not stored: no hint to show it later)."""
    for note in prepared.notes:
        click.echo(f"note: {note}", err=True)
    if prepared.plan is None:
        click.echo(f"the cloud already matches snapshot {prepared.target.info.id}: "
                   f"nothing to do")
        return
    click.echo(render_plan(prepared.plan, prepared.live, approve_hint=False,
                           stored=not dry_run, width=terminal_width()))


@click.command("apply")
@click.argument("plan_id")
@click.option("--yes", is_flag=True, help="Run a proposed plan without a separate approval.")
@click.option("--dry-run", is_flag=True,
              help="Walk the whole run on a simulated copy of the live state: exit 0 "
                   "if the real run would succeed; nothing is changed or stored.")
@click.option("--max-parallel", type=click.IntRange(min=1), metavar="N",
              help="Migrations at once [default: [executor] max_parallel, 4].")
@click.option("--resume", is_flag=True,
              help="Continue a plan that a crash or a signal interrupted.")
@click.option("--on-timeout", type=click.Choice(["abort", "force-complete"]),
              help="A live migration that outlives [executor] migration_timeout is aborted "
                   "through Nova, or forced to complete [default: [executor] on_timeout, "
                   "abort].")
@click.option("--replan", is_flag=True,
              help="When the live cloud has drifted beyond [executor] max_drift from the "
                   "plan's snapshot, plan again from a fresh snapshot with the same choices "
                   "(run it with --yes) instead of refusing.")
@BMC_FILE
@pass_app
def apply_cmd(app: AppContext, plan_id: str, yes: bool, dry_run: bool,
              max_parallel: int | None, resume: bool, on_timeout: str | None,
              replan: bool, bmc_file: str | None) -> None:
    """Run a plan: live-migrate, disable and power off the emptied hosts, journaling it all.

    It first states the age of the plan's snapshot and how far the live cloud has drifted
    from it, and refuses a plan drifted beyond [executor] max_drift (see --replan).
    """
    app.bmc_file = bmc_file
    if replan and (dry_run or resume):
        raise click.UsageError("--replan stores a new plan: not with --dry-run or --resume")
    plan = check_applicable(app, plan_id, yes=yes, dry_run=dry_run, resume=resume)
    if not resume:
        fresh = check_fresh(app, plan, replan=replan)
        if fresh is not None:
            if not yes:
                click.echo(render_plan(fresh, get_snapshot(app, fresh.snapshot_id).cluster,
                                       width=terminal_width()))
                raise ConsolidatorError(f"plan {plan.id} was cancelled and replanned as "
                                        f"{fresh.id} (shown above): approve it and apply it, "
                                        f"or give --yes with --replan")
            plan = check_applicable(app, fresh.id, yes=True, dry_run=False, resume=False)
    outcome = run_and_summarise(app, plan.id, max_parallel=max_parallel, dry_run=dry_run,
                                resume=resume, on_timeout=on_timeout)
    if dry_run:
        dry_run_verdict(plan.id, outcome)
    if outcome.interrupted:
        raise ConsolidatorError(f"plan {plan.id} was interrupted: finish it with "
                                f"'consolidator apply --resume {plan.id}'")
    if not outcome.ok:
        raise ConsolidatorError(f"plan {plan.id} did not finish: see the summary above and "
                                f"'consolidator journal --plan {plan.id}'")


@click.command("rollback")
@click.argument("snapshot_id")
@click.option("--yes", is_flag=True, help="Run the rollback plan without asking.")
@click.option("--dry-run", is_flag=True,
              help="Walk the rollback on a simulated copy of the live state: exit 0 "
                   "if the real run would succeed; nothing is changed or stored.")
@click.option("--max-parallel", type=click.IntRange(min=1), metavar="N",
              help="Migrations at once [default: [executor] max_parallel, 4].")
@click.option("--partial", is_flag=True,
              help="Move back what fits and report the rest, instead of refusing the whole.")
@click.option("--resume", is_flag=True,
              help="Continue the rollback to this snapshot that a crash or a signal "
                   "interrupted.")
@BMC_FILE
@pass_app
def rollback_cmd(app: AppContext, snapshot_id: str, yes: bool, dry_run: bool,
                 max_parallel: int | None, partial: bool, resume: bool,
                 bmc_file: str | None) -> None:
    """Put the cloud back as a snapshot recorded it: power on, enable, migrate back.

    Only hosts consolidator powered off are powered on; a host disabled or down for another
    reason is reported and left alone, and nothing is moved onto it.
    """
    app.bmc_file = bmc_file

    def run(ctx: AppContext, plan_id: str, again: bool) -> Outcome:
        return run_and_summarise(ctx, plan_id, max_parallel=max_parallel, dry_run=dry_run,
                                 resume=again, kind="rollback plan")

    def confirm(question: str) -> bool:
        return yes or click.confirm(question, default=False, abort=True)

    done = roll_back(app, snapshot_id, partial=partial, resume=resume, dry_run=dry_run,
                     show=lambda prepared: show_rollback(prepared, dry_run=dry_run),
                     confirm=confirm, run=run)
    if done.plan_id is None or done.outcome is None:
        return
    if dry_run:
        dry_run_verdict(done.plan_id, done.outcome, rollback=True)
    if not done.outcome.ok:
        raise ConsolidatorError(f"rollback plan {done.plan_id} did not finish: see the summary")
