"""consolidator plan / plans / algorithms: make, review, approve and cancel plans."""

from __future__ import annotations

import json
import time
from functools import partial
from typing import TYPE_CHECKING, Any

import click

from consolidator.app.catalog import algorithm_entries, plan_states, ranking_entries
from consolidator.app.compare import compare_plans
from consolidator.app.context import AppContext
from consolidator.app.freshness import age_of
from consolidator.app.planning import (
    PlanRequest,
    check_live,
    check_scope,
    make_plan,
    validate_request,
)
from consolidator.app.review import (
    approved_line,
    asked_row,
    change_status,
    list_plans,
    show_plan,
)
from consolidator.app.snapshots import get_snapshot, record_scenario, record_snapshot
from consolidator.cli.context import (
    BMC_FILE,
    FiniteRange,
    echo_listing,
    output_options,
    pass_app,
    terminal_width,
)
from consolidator.core.errors import ConsolidatorError, UsageError
from consolidator.core.wording import duration, plural
from consolidator.render.compare import render_comparison
from consolidator.render.fit import fit_table, fit_text
from consolidator.render.listing import ID_PREFIX, TO_THE_MINUTE, Column, Output, listing, show
from consolidator.render.plan import MAX_LISTED, render_plan

if TYPE_CHECKING:
    from consolidator.core.model import Cluster
    from consolidator.core.plan import StoredPlan


#: The fields of 'plan show -c' (-f json prints the whole plan).
PLAN_FIELDS = tuple(Column(k.upper().replace("_", " "), (k,)) for k in (
    "id", "status", "cloud", "snapshot_id", "algorithm", "ranking", "created_at",
    "hosts_before", "hosts_after", "lower_bound", "migrations_lower_bound", "migrations",
    "power_off", "power_on", "left_on", "spare_hosts", "watts_saved", "reason", "notes"))


def _parse_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r}: expected KEY=VALUE", param_hint="--option")
        lowered = value.strip().lower()
        options[key.strip()] = (True if lowered == "true" else False if lowered == "false"
                                else value.strip())
    return options


#: --check-live with a plan of a scenario: nothing is stored before it is refused.
_NO_LIVE_CLOUD = ("--check-live asks the live cloud's Placement, and {} has none: drop "
                  "--check-live, or plan from the live cloud (no --scenario, or a snapshot "
                  "of the cloud)")


def _live_checkable(snap: Any, check_live: bool) -> Any:
    """The snapshot, unless --check-live is asked of a scenario's (UsageError)."""
    if check_live and snap.info.cloud.startswith("scenario:"):
        raise UsageError(_NO_LIVE_CLOUD.format(f"snapshot {snap.info.id} ({snap.info.cloud})"))
    return snap


def _front_conflicts(fmt: str, objective: str | None, check_live: bool,
                     budget: dict[str, object]) -> None:
    """--front picks no point and stores no plan: refuse what it would silently ignore."""
    given = [f"--{name.replace('_', '-')}" for name, value in budget.items()
             if value is not None]
    given += [flag for flag, on in (("--format id", fmt == "id"), ("--check-live", check_live),
                                    ("--objective energy", objective == "energy")) if on]
    if given:
        raise click.UsageError(f"--front shows every trade-off and stores no plan: drop "
                               f"{' and '.join(given)}, or drop --front to make that plan")


@click.group("plan", invoke_without_command=True)
@click.option("-a", "--algorithm", metavar="NAME",
              help="Packing algorithm (see 'consolidator algorithms'), or auto: the fast ones, "
                   "keeping the plan that frees the most hosts within the budget [default: "
                   "[planner] algorithm, auto].")
@click.option("-r", "--ranking", metavar="NAME",
              help="Ranking that chooses among feasible targets [default: the algorithm's own].")
@click.option("--snapshot", "snapshot_ref", metavar="ID", help="Plan from a stored snapshot.")
@click.option("--scenario", type=click.Path(dir_okay=False),
              help="Plan from a scenario file (it is recorded as a snapshot first).")
@click.option("--spare", type=click.IntRange(min=0), help="Empty hosts to keep powered.")
@click.option("--light", is_flag=True, help="hvp: METAHVPLIGHT instead of METAHVP.")
@click.option("--capacity-model", type=click.Choice(["auto", "placement", "ucac"]),
              help="ucac: also keep CPU usage within each host's cores at --confidence "
                   "(paper 003) [default: [planner] capacity_model].")
@click.option("--confidence", type=FiniteRange(0.5, 1.0, max_open=True),
              help="Confidence alpha for ucac [default: [planner] confidence, 0.98].")
@click.option("-o", "--option", "raw_options", multiple=True, metavar="KEY=VALUE",
              help="Algorithm or ranking option, e.g. bin=8x8x6, assign=false, "
                   "prime_resource=memory_mb, weights=1,0,-2.")
@click.option("--objective", type=click.Choice(["hosts", "energy"]),
              help="energy: keep the hosts that draw least at idle (BMC readings, else "
                   "[energy] idle_watts) and empty the ones that draw most [default: "
                   "[planner] objective, hosts].")
@click.option("--check-live", is_flag=True,
              help="Then ask the live cloud's Placement about every move, as apply will "
                   "before each wave, and list the moves it would refuse (exit 1 if any).")
@click.option("--max-migrations", type=click.IntRange(min=0), metavar="N",
              help="Budget: at most N migrations; 0 allows none, as [planner] "
                   "max_migrations = 0 [default: [planner] max_migrations; empty: no "
                   "limit].")
@click.option("--max-moved-gib", type=FiniteRange(min=0), metavar="G",
              help="Budget: the migrations move at most G GiB of instance memory.")
@click.option("--target-hosts", type=click.IntRange(min=1), metavar="K",
              help="Budget: reach K hosts left on with the fewest migrations.")
@click.option("--front", "show_front", is_flag=True,
              help="Show the plans no other beats on hosts left on and migrations (the "
                   "least GiB moved among equals), each named by the algorithm or search "
                   "that made it, as a table and a chart, and the snapshot they come from; "
                   "store no plan. At each point's migrations, --max-migrations plans "
                   "about as well.")
@click.option("--relieve", is_flag=True,
              help="Instead of consolidating, relieve the hosts usage overloads (CPU at "
                   "[planner] confidence over their cores, or memory short): the moves the "
                   "daemon's relief watch would make, as a plan to review (see "
                   "docs/usage-loop.rst).")
@click.option("--scope", metavar="az=NAME|aggregate=NAME|host=GLOB",
              help="Plan only inside one availability zone, host aggregate or the hosts a "
                   "glob matches; nothing outside it moves or is powered off [default: "
                   "[planner] scope; '' for the whole cloud].")
@BMC_FILE
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json", "yaml", "value", "id"]),
              default="table", show_default=True,
              help="Output format; id prints only the new plan's id, as 'snapshot' does: "
                   "PLAN=$(consolidator plan ... --format id).")
@click.option("-c", "--column", "columns", multiple=True, metavar="COLUMN",
              help="Only this field (as 'plan show -c'); repeat for more.")
@click.pass_context
def plan_group(ctx: click.Context, algorithm: str | None, ranking: str | None,
               snapshot_ref: str | None, scenario: str | None, spare: int | None, light: bool,
               capacity_model: str | None, confidence: float | None,
               raw_options: tuple[str, ...], objective: str | None,
               check_live: bool, max_migrations: int | None,
               max_moved_gib: float | None, target_hosts: int | None, show_front: bool,
               relieve: bool, scope: str | None, bmc_file: str | None, fmt: str,
               columns: tuple[str, ...]) -> None:
    """Make a migration plan, store it as proposed and print it for review.

    Without --snapshot or --scenario it snapshots the live cloud first. Hosts the BMC file
    does not list are emptied but left on, and the plan says so. Plans of one snapshot
    stay side by side ('plans compare'); approving one supersedes the others.
    Subcommands show, approve and cancel stored plans.
    """
    if ctx.invoked_subcommand is not None:
        return
    app: AppContext = ctx.obj
    app.bmc_file = bmc_file
    options = _parse_options(raw_options)
    if light:
        options["light"] = True
    request = PlanRequest(algorithm=algorithm, ranking=ranking, spare=spare,
                          capacity_model=capacity_model, confidence=confidence, options=options,
                          max_migrations=max_migrations, max_moved_gib=max_moved_gib,
                          target_hosts=target_hosts,
                          objective=objective, scope=scope)
    if show_front:
        _front_conflicts(fmt, objective, check_live,
                         {"max_migrations": max_migrations, "max_moved_gib": max_moved_gib,
                          "target_hosts": target_hosts})
    validate_request(app, request)   # all it can refuse, before a snapshot is stored
    if snapshot_ref and scenario:
        raise click.UsageError("give --snapshot or --scenario, not both")
    if check_live and scenario:
        raise UsageError(_NO_LIVE_CLOUD.format("a scenario file"))
    app.engine()
    if relieve:
        _relief_conflicts(algorithm, ranking, show_front, objective, capacity_model,
                          {"max_migrations": max_migrations, "max_moved_gib": max_moved_gib,
                           "target_hosts": target_hosts, "spare": spare})
        snap = record_scenario(app, scenario) if scenario else \
            _live_checkable(get_snapshot(app, snapshot_ref), check_live) if snapshot_ref \
            else None
        _relieve(app, snap, fmt, check_live)
        return
    in_scope = partial(check_scope, app, request)
    if scenario:
        snap = record_scenario(app, scenario, check=in_scope)
    elif snapshot_ref:
        snap = _live_checkable(get_snapshot(app, snapshot_ref), check_live)
    else:
        snap = record_snapshot(app, check=in_scope)[0]
    if show_front:
        _show_front(app, snap, request, fmt)
        return
    started = time.monotonic()
    stored = make_plan(app, snap, request)
    elapsed = time.monotonic() - started
    if fmt == "id":
        click.echo(stored.id)
    else:
        click.echo(show(stored.to_json(), PLAN_FIELDS,
                        Output(fmt=fmt, columns=columns, width=terminal_width()),
                        lambda: render_plan(stored, snap.cluster, width=terminal_width())))
    if fmt != "json":
        click.echo(f"(planned in {elapsed:.2f} s from snapshot {snap.info.id}, taken "
                   f"{duration(age_of(snap.info.taken_at))} ago)", err=True)
    if check_live:
        _check_live(app, stored, snap.cluster)


def _relief_conflicts(algorithm: str | None, ranking: str | None, show_front: bool,
                      objective: str | None, capacity_model: str | None,
                      given: dict[str, object]) -> None:
    """--relieve has its own algorithm and capacity model: refuse what it would ignore."""
    flags = [f"--{name.replace('_', '-')}" for name, value in given.items()
             if value is not None]
    flags += [flag for flag, on in (("--algorithm", algorithm), ("--ranking", ranking),
                                    ("--front", show_front), ("--objective", objective),
                                    ("--capacity-model", capacity_model)) if on]
    if flags:
        raise click.UsageError(f"--relieve moves instances off overloaded hosts with the ucac "
                               f"model at [planner] confidence: drop {' and '.join(flags)}")


def _relieve(app: AppContext, snap: Any, fmt: str, check_live: bool) -> None:
    from consolidator.app.relief import relief_plan

    found = relief_plan(app, snapshot=snap)
    if found.plan is None:
        if fmt == "json":
            click.echo(json.dumps({"plan": None, "overloaded": [
                o.describe() for o in found.overloads],
                "unresolved": list(found.relief.unresolved)}, indent=2))
        elif fmt != "id":
            click.echo("no host is overloaded" if not found.overloads else
                       "overloaded, and nothing can relieve them: " +
                       "; ".join(o.describe() for o in found.overloads))
        return
    assert found.snapshot is not None
    if fmt == "json":
        click.echo(json.dumps(found.plan.to_json(), indent=2))
    elif fmt == "id":
        click.echo(found.plan.id)
    else:
        click.echo(render_plan(found.plan, found.snapshot.cluster, width=terminal_width()))
    if check_live:
        _check_live(app, found.plan, found.snapshot.cluster)


def _show_front(app: AppContext, snap: Any, request: PlanRequest, fmt: str) -> None:
    from consolidator.app.front import front_of
    from consolidator.render.front import front_chart, front_json, front_table

    points = front_of(app, snap, request)
    if fmt == "json":
        click.echo(json.dumps({"snapshot": snap.info.id, **front_json(points)}, indent=2))
    else:
        width = terminal_width()
        click.echo(front_table(points, width) + "\n\n" + fit_text(front_chart(points), width)
                   + "\n\n"
                   + fit_text(f"snapshot {snap.info.id}; plan a point from it with: "
                              f"consolidator plan --snapshot {snap.info.id} --max-migrations "
                              f"N (or --max-moved-gib G, --target-hosts K)", width))


def _check_live(app: AppContext, stored: StoredPlan, cluster: Cluster) -> None:
    refused = check_live(app, stored, cluster)
    if not refused:
        click.echo(f"live check: Placement takes all "
                   f"{plural(len(stored.draft.migrations), 'migration')} of plan {stored.id}",
                   err=True)
        return
    for name, why in refused.items():
        click.echo(f"  refused: {name}: {why}", err=True)
    raise ConsolidatorError(f"live check: Placement would refuse {len(refused)} of the "
                            f"{plural(len(stored.draft.migrations), 'migration')} "
                            f"of plan {stored.id} "
                            f"(listed above): re-plan from a fresh snapshot")


@plan_group.command("show")
@click.argument("plan_id")
@click.option("--all", "full", is_flag=True,
              help=f"List every migration (without it, the first {MAX_LISTED}).")
@output_options(long=False, sort=False)
@pass_app
def plan_show(app: AppContext, plan_id: str, full: bool, out: Output) -> None:
    """Show a stored plan against the snapshot it was made from."""
    stored, cluster = show_plan(app, plan_id)
    click.echo(show(stored.to_json(), PLAN_FIELDS, out,
                    lambda: render_plan(stored, cluster, full=full,
                                        width=out.width)))


@plan_group.command("approve")
@click.argument("plan_id")
@pass_app
def plan_approve(app: AppContext, plan_id: str) -> None:
    """Approve a proposed plan so that 'apply' (or the daemon) may run it."""
    full, changed = change_status(app, plan_id, "approved")
    click.echo(approved_line(app, full, changed))


@plan_group.command("cancel")
@click.argument("plan_id")
@pass_app
def plan_cancel(app: AppContext, plan_id: str) -> None:
    """Cancel a plan that has not started."""
    full, changed = change_status(app, plan_id, "cancelled")
    click.echo(f"plan {full} {'cancelled' if changed else 'was already cancelled'}")


@click.group("plans")
def plans_group() -> None:
    """List and compare stored plans."""


#: The columns of 'plans list' (CLOUD, LOWER BOUND, ALGORITHM and RANKING with --long).
PLAN_COLUMNS = (
    Column("ID", ("id",), short=ID_PREFIX), Column("CLOUD", ("cloud",), long=True, wrap=8),
    Column("STATUS", ("status",)), Column("ASKED", ("asked",), wrap=12),
    Column("CREATED (UTC)", ("created_at",), short=TO_THE_MINUTE,
           cell=lambda r: r["created_at"][:19].replace("T", " ")),
    Column("HOSTS", ("hosts_before", "hosts_after"),
           cell=lambda r: f"{r['hosts_before']} -> {r['hosts_after']}"),
    Column("MIGRATIONS", ("migrations",)),
    Column("LOWER BOUND", ("lower_bound",), align="r", long=True,
           cell=lambda r: None if r["algorithm"] == "rollback" else r["lower_bound"]),
    Column("ALGORITHM", ("algorithm",), long=True), Column("RANKING", ("ranking",), long=True))


@plans_group.command("list")
@click.option("--status", type=click.Choice(plan_states()),
              help="Only plans in this state.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="Show at most N plans, the newest first.", metavar="N")
@output_options()
@pass_app
def plans_list(app: AppContext, status: str | None, limit: int, out: Output) -> None:
    """List plans, newest first."""
    rows = list_plans(app, status=status, limit=limit)
    records = [{"id": r.id, "cloud": r.cloud, "status": r.status,
                "algorithm": r.algorithm, "ranking": r.ranking,
                "asked": asked_row(r), "migrations": r.migrations,
                "created_at": r.created_at.isoformat(),
                "hosts_before": r.hosts_before, "hosts_after": r.hosts_after,
                "lower_bound": r.lower_bound} for r in rows]
    if not rows and out.fmt == "table":
        click.echo("no plans yet: make one with 'consolidator plan'")
        return
    echo_listing(listing(records, PLAN_COLUMNS, out))


@plans_group.command("compare")
@click.argument("plan_ids", nargs=-1, required=True, metavar="PLAN...")
@output_options(long=False)
@pass_app
def plans_compare(app: AppContext, plan_ids: tuple[str, ...], out: Output) -> None:
    """Put candidate plans side by side: hosts, migrations, GiB moved, watts saved."""
    rows = compare_plans(app, list(plan_ids))
    if out.fmt == "table" and not out.columns and not out.sort:
        click.echo(render_comparison(rows, out.width))
        return
    records = [r.to_json() for r in rows]
    echo_listing(listing(records, [Column(k.upper().replace("_", " "), (k,))
                                 for k in (records[0] if records else {})], out))


@click.command("algorithms")
@output_options(long=False)
def algorithms_cmd(out: Output) -> None:
    """List the packing algorithms and rankings, each with its paper."""
    algorithms = [list(e) for e in algorithm_entries()] + [
        ["auto", "the default: zoned-bestfit and hvp --light, keeping the plan "
         "that frees the most hosts within the budget", ""],
        ["fewest-migrations", "what a budgeted plan may read: the k least "
         "populated hosts emptied by METAHVPLIGHT (not an -a choice)", "002"],
        ["budget-search", "what a budgeted plan may read: hosts to empty chosen by "
         "capacity and population within the budget, packed by METAHVPLIGHT (not an -a "
         "choice)", "002"]]
    rankings = [list(e) for e in ranking_entries()]
    if out.fmt == "table" and not out.columns and not out.sort:
        click.echo(fit_table(["ALGORITHM", "WHAT IT DOES", "PAPER"], algorithms, "lll",
                             out.width, wraps={1: 20, 2: 12}))
        click.echo()
        click.echo(fit_table(["RANKING", "WHAT IT DOES", "PAPER"], rankings, "lll",
                             out.width, wraps={1: 20, 2: 12}))
        return
    records = [{"kind": kind, "name": n, "summary": what, "paper": paper}
               for kind, entries in (("algorithm", algorithms), ("ranking", rankings))
               for n, what, paper in entries]
    echo_listing(listing(records, (Column("KIND", ("kind",)), Column("NAME", ("name",)),
                                 Column("WHAT IT DOES", ("summary",), wrap=20),
                                 Column("PAPER", ("paper",))), out))
