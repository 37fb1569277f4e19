"""Making a plan: the config's [planner] defaults and what the operator asked, merged once;
the checked plan for the objective (hosts, within the budget, or energy) of a snapshot; then
stored."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from consolidator.app.context import AppContext
from consolidator.app.notify import notify
from consolidator.app.power_readings import idle_estimates
from consolidator.app.settings import (
    EnergySettings,
    PlannerChoices,
    config_scope,
    energy_settings,
    planner_choices,
    settings_from_config,
)
from consolidator.core.algorithm_options import check_options
from consolidator.core.algorithms.base import Ranker
from consolidator.core.algorithms.catalog import ALGORITHMS
from consolidator.core.constraints import UsageModel
from consolidator.core.cpu_speed import speed_map
from consolidator.core.energy_model import CONFIGURED, saving
from consolidator.core.errors import UsageError
from consolidator.core.front import AUTO, FAST_ALGORITHMS, Budget, FrontBuilder, plan_within
from consolidator.core.front_budgets import plan_own
from consolidator.core.model import Cluster
from consolidator.core.plan import Move, PlanDraft, StoredPlan
from consolidator.core.planner import PlanSettings, stay_on_reasons
from consolidator.core.rankings.catalog import get_ranking
from consolidator.core.scope import check_matches, parse_scope
from consolidator.core.usage_power import beyond_budget, hold_power_off
from consolidator.core.wording import plural
from consolidator.core.zones import zones_for_cluster
from consolidator.store.plans import save_plan
from consolidator.store.snapshots import Snapshot, usage_history


@dataclass(frozen=True)
class PlanRequest:
    """What to plan with; None means the config's value."""

    algorithm: str | None = None
    ranking: str | None = None
    spare: int | None = None
    capacity_model: str | None = None
    confidence: float | None = None
    options: dict[str, Any] | None = None
    max_migrations: int | None = None
    max_moved_gib: float | None = None
    target_hosts: int | None = None
    #: hosts (the algorithm's own choice) or energy (see energy_objective).
    objective: str | None = None
    #: The daemon's cool-down: (hosts that stay on -> why, power-offs allowed or None).
    cool_down: tuple[Mapping[str, str], int | None] | None = None
    #: az=NAME, aggregate=NAME or host=GLOB ('' for the whole cloud); None: [planner] scope.
    scope: str | None = None


@dataclass(frozen=True)
class PlanChoice:
    """A request merged with the config's [planner] choices: what a plan is made with."""

    #: The config's choices, the request's where it makes one; max_migrations stays the
    #: config's (named when the energy objective goes beyond it): the budget holds the limit.
    planner: PlannerChoices
    options: dict[str, Any]
    #: The request's limits; migrations default to [planner] max_migrations (None: no limit,
    #: 0: none, as --max-migrations 0).
    budget: Budget


def choose(config: PlannerChoices, request: PlanRequest) -> PlanChoice:
    """The request's choices, else the config's: worked out once for a plan."""
    most = request.max_migrations if request.max_migrations is not None \
        else config.max_migrations
    planner = replace(
        config, algorithm=request.algorithm or config.algorithm,
        ranking=request.ranking if request.ranking is not None else config.ranking,
        spare=request.spare if request.spare is not None else config.spare,
        capacity_model=request.capacity_model or config.capacity_model,
        confidence=request.confidence if request.confidence is not None else config.confidence,
        objective=request.objective or config.objective)
    return PlanChoice(planner, dict(request.options or {}),
                      Budget(max_migrations=most, max_moved_gib=request.max_moved_gib,
                             target_hosts=request.target_hosts))


def validate_request(ctx: AppContext, request: PlanRequest) -> None:
    """Fail early, in one line, on an unknown algorithm or ranking or a bad ranking option,
    a budget with the energy objective, or -a exact without OR-Tools: everything that can
    be refused before a snapshot is stored (a refused plan leaves no snapshot behind)."""
    choice = choose(planner_choices(ctx.config), request)
    algorithm, ranking = choice.planner.algorithm, choice.planner.ranking
    if algorithm != AUTO and algorithm not in ALGORITHMS.names():
        raise UsageError(f"unknown algorithm {algorithm!r}: choose one of "
                         f"{', '.join(sorted([AUTO, *ALGORITHMS.names()]))}")
    check_options(algorithm, ranking or None, choice.options)
    get_ranking(ranking, choice.options)
    parse_scope(request.scope)
    if choice.planner.objective == "energy":
        check_energy_request(request)
    if algorithm == "exact":
        from consolidator.core.algorithms.exact_model import load_cp_model

        load_cp_model()


def check_scope(ctx: AppContext, request: PlanRequest, cluster: Cluster) -> None:
    """UsageError when the request's scope (else [planner] scope) matches no host of the
    cluster: checked on a cloud just read, before its snapshot is stored."""
    scope = parse_scope(request.scope) if request.scope is not None else \
        config_scope(ctx.config)
    check_matches(scope, cluster.hosts)


def check_energy_request(request: PlanRequest) -> None:
    """Budgets pick among plans by hosts freed: not with --objective energy (UsageError).
    [planner] max_migrations does not apply to it; -a auto plans with zoned-bestfit."""
    if request.max_migrations is not None or request.max_moved_gib is not None \
            or request.target_hosts is not None:
        raise UsageError("--max-migrations, --max-moved-gib and --target-hosts work with "
                         "--objective hosts: drop them or the energy objective")


@dataclass(frozen=True)
class PlanInputs:
    """What a planner needs, merged from the snapshot, the config and the request."""

    cluster: Cluster
    algorithm: str
    settings: PlanSettings
    spare: int
    options: dict[str, Any]
    ranking: Ranker | None
    #: Hosts that cannot be powered off: names without a BMC entry, or name -> why.
    no_bmc: list[str] | dict[str, str]
    choice: PlanChoice
    energy: EnergySettings


def algorithm_options(zones: dict[str, str], algorithm: str, cluster: Cluster,
                      extra: dict[str, Any]) -> dict[str, Any]:
    """Options for an algorithm: the [zones] for the zoned ones, then the command line's."""
    options: dict[str, Any] = {}
    if algorithm in ("zoned-bestfit", "auto"):
        found = zones_for_cluster(cluster, zones)
        if found is not None:
            options["zones"] = found
    options.update(extra)
    return options


def resolved_capacity_model(model: str, cluster: Cluster) -> str:
    """The capacity model a plan uses: auto is ucac when the snapshot carries measured CPU
    usage (telemetry, or a scenario's usage) for any instance, else placement."""
    if model != "auto":
        return model
    measured = any(i.usage and "cpu_mean" in i.usage for i in cluster.instances)
    return "ucac" if measured else "placement"


def plan_inputs(ctx: AppContext, snapshot: Snapshot, request: PlanRequest) -> PlanInputs:
    """The cluster (pooled with usage history for ucac), settings, options and ranking."""
    choice = choose(planner_choices(ctx.config), request)
    planner = replace(choice.planner, capacity_model=resolved_capacity_model(
        choice.planner.capacity_model, snapshot.cluster))
    choice = replace(choice, planner=planner)
    ranking = get_ranking(planner.ranking, {"confidence": planner.confidence, **choice.options})
    cluster = snapshot.cluster
    if planner.capacity_model == "ucac" or planner.ranking == "ucac":
        history = usage_history(ctx.engine(), snapshot.info.cloud,
                                before=snapshot.info.taken_at, limit=planner.usage_history)
        from consolidator.telemetry.prometheus import pooled_cluster

        cluster = pooled_cluster(cluster, history)
    settings = replace(settings_from_config(ctx.config), usage=UsageModel(
        confidence=planner.confidence if planner.capacity_model == "ucac" else None,
        fallback_mean=planner.fallback_mean, fallback_cov=planner.fallback_cov,
        speed=speed_map(cluster, planner.cpu_speed)))
    if request.scope is not None:
        settings = replace(settings, rules=replace(settings.rules,
                                                   scope=parse_scope(request.scope)))
    check_matches(settings.rules.scope, cluster.hosts)
    scenario = snapshot.info.cloud.startswith("scenario:")
    listed = ctx.bmc_hosts() if not scenario else None
    no_bmc = [] if listed is None else [h.name for h in cluster.hosts
                                        if h.name not in listed and h.compute_host not in listed]
    # no BMC file at all (and no lookup given): the plan powers nothing off and says so
    settings = replace(settings, migrate_only=listed is None and not scenario
                       and ctx.power is None)
    options = algorithm_options(planner.zones, planner.algorithm, cluster, choice.options)
    return PlanInputs(cluster, planner.algorithm, settings, planner.spare, options, ranking,
                      no_bmc, choice, energy_settings(ctx.config))


def plan_within_budget(cluster: Cluster, algorithm: str, budget: Budget, *,
                       settings: PlanSettings, spare: int, options: dict[str, Any],
                       ranking: Ranker | None, no_bmc: Collection[str]) -> PlanDraft:
    """The checked plan of the algorithm (auto: the fast ones) that frees the most hosts
    within the budget; draft.choice says which won and why."""
    builder = FrontBuilder(cluster, settings, spare=spare, options=options, ranking=ranking,
                           no_bmc=no_bmc)
    return plan_within(builder, algorithm, budget)


def plan_for_objective(ctx: AppContext, snapshot: Snapshot, i: PlanInputs, algorithm: str,
                       hosts_planner: Any = None) -> PlanDraft:
    """The checked plan for the objective (hosts: the algorithm's own, or hosts_planner's
    (cluster, algorithm, **plan_args) when given; energy: the plan that powers off the most
    idle watts), with each powered-off host's estimated idle draw."""
    from consolidator.core.energy_objective import energy_plan
    from consolidator.core.planner import plan_cluster

    args: dict[str, Any] = {"settings": i.settings, "spare": i.spare, "options": i.options,
                            "ranking": i.ranking, "no_bmc": i.no_bmc}
    idle, for_energy = i.energy.idle_watts, i.choice.planner.objective == "energy"
    estimates = idle_estimates(ctx, snapshot, i.energy)
    if for_energy:
        draft = energy_plan(i.cluster, algorithm, {h: e.watts for h, e in estimates.items()},
                            fallback=idle, **args)
    else:
        draft = (hosts_planner or plan_cluster)(i.cluster, algorithm, **args)
    spent = saving(draft.power_off, estimates, idle)
    if for_energy and all(e.basis == CONFIGURED for e in estimates.values()):
        draft = replace(draft, notes=(*draft.notes, (
            f"objective energy: no host has a power reading, so every host counts at "
            f"[energy] idle_watts ({idle:g} W) and hosts are told apart by "
            f"size alone; take a snapshot of the live cloud with its BMC file to measure them")))
    return replace(draft, host_watts=dict(spent.per_host), watts_basis=dict(spent.basis))


def draft_plan(ctx: AppContext, snapshot: Snapshot, request: PlanRequest,
               i: PlanInputs) -> PlanDraft:
    """Make and check a plan for a snapshot from its inputs, for the chosen objective."""
    choice = i.choice
    if choice.planner.objective == "energy":
        check_energy_request(request)
        algorithm = FAST_ALGORITHMS[0] if i.algorithm == AUTO else i.algorithm
        draft = plan_for_objective(ctx, snapshot, i, algorithm)
        most = choice.planner.max_migrations
        if most is not None and len(draft.migrations) > most:
            draft = replace(draft, notes=(*draft.notes, (
                f"[planner] max_migrations = {most} does not apply with --objective energy: "
                f"{plural(len(draft.migrations), 'migration')}")))
        return draft
    if i.algorithm == AUTO or not choice.budget.unlimited:
        return plan_for_objective(ctx, snapshot, i, i.algorithm,
                                  hosts_planner=partial(plan_within_budget,
                                                        budget=choice.budget))
    # the algorithm's plan, unless the front has one as good on hosts for fewer migrations
    return plan_for_objective(ctx, snapshot, i, i.algorithm, hosts_planner=plan_own)


#: Plans made at most to keep the power-offs within the hour's budget of power actions.
BUDGET_ROUNDS = 3


def draft_cooled_down(ctx: AppContext, snapshot: Snapshot, request: PlanRequest,
                      i: PlanInputs, holds: Mapping[str, str], budget: int | None
                      ) -> PlanDraft:
    """The plan under the daemon's power cool-down. Hosts it holds on are given to the
    planner as hosts that cannot be powered off, so they are emptied only when the plan needs
    them empty; power-offs beyond the hour's budget are held the same way and the plan made
    again. What is still beyond it after BUDGET_ROUNDS is left on, emptied, with why."""
    stay_on = {**stay_on_reasons(i.no_bmc), **holds}
    if budget == 0:     # nothing may be powered off this hour: nothing is worth emptying
        stay_on.update({h.name: beyond_budget(0) for h in i.cluster.hosts
                        if h.name not in stay_on})
    draft = draft_plan(ctx, snapshot, request, replace(i, no_bmc=stay_on))
    held = [h for h in holds if h in i.cluster.host_index]
    for _ in range(BUDGET_ROUNDS - 1):
        if budget is None or len(draft.power_off) <= budget:
            break
        held += draft.power_off[budget:]
        stay_on.update(dict.fromkeys(draft.power_off[budget:], beyond_budget(budget)))
        draft = draft_plan(ctx, snapshot, request, replace(i, no_bmc=stay_on))
    notes = [f"cool-down: {host} stays on, "
             f"{stay_on[host].removeprefix('emptied, left on: ')}"
             for host in held if host not in draft.left_on and host not in draft.power_off]
    if budget == 0:
        notes.append(f"cool-down: no host is powered off, "
                     f"{beyond_budget(0).removeprefix('emptied, left on: ')}")
    return hold_power_off(replace(draft, notes=(*draft.notes, *notes)), holds, budget)


def make_plan(ctx: AppContext, snapshot: Snapshot, request: PlanRequest) -> StoredPlan:
    """Make, check and store a proposed plan for a snapshot."""
    i = plan_inputs(ctx, snapshot, request)
    if request.cool_down is None:
        draft = draft_plan(ctx, snapshot, request, i)
    else:
        draft = draft_cooled_down(ctx, snapshot, request, i, *request.cool_down)
    if i.settings.rules.scope is not None:   # recorded with the plan, for its review
        draft = replace(draft, options={**draft.options, "scope": str(i.settings.rules.scope)})
    if i.choice.planner.capacity_model == "ucac":
        # recorded with the plan, so that 'plans list' shows what was asked
        draft = replace(draft, options={**draft.options, "capacity_model": "ucac",
                                        "confidence": i.choice.planner.confidence})
    from consolidator.app.audit import actor_of

    stored = save_plan(ctx.engine(), draft, cloud=snapshot.info.cloud,
                       snapshot_id=snapshot.info.id, created_by=actor_of(ctx).to_json())
    notify(ctx, "plan.proposed", plan=stored)
    return stored


def check_live(ctx: AppContext, plan: StoredPlan, cluster: Cluster) -> dict[str, str]:
    """Ask the live Placement about every move of a plan, as the executor will before each
    wave: per destination, all the instances the plan sends there. Instance name -> why
    Placement would refuse it (empty: every move passes)."""
    from consolidator.execution.executor import demand_of
    from consolidator.openstack import placement

    conn = ctx.connect(ctx.cloud_name or plan.cloud)
    arriving: dict[str, list[Move]] = defaultdict(list)
    for move in plan.draft.migrations:
        arriving[move.destination].append(move)
    names = {m.instance_id: m.instance_name for m in plan.draft.migrations}
    refused: dict[str, str] = {}
    for dest, moves in arriving.items():
        found = placement.refusals(conn, cluster.hosts[cluster.host_index[dest]].id,
                                   [demand_of(cluster, m) for m in moves])
        refused.update({names[i]: f"destination {dest}: {why}" for i, why in found.items()})
    return refused
