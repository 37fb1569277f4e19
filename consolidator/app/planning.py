"""Making a plan: a snapshot, the config and what the operator asked, merged; then stored."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from consolidator.app.budget import (
    AUTO,
    FAST_ALGORITHMS,
    budget_of,
    check_energy_request,
    plan_within_budget,
)
from consolidator.app.context import AppContext
from consolidator.app.power_readings import plan_for_objective
from consolidator.app.settings import algorithm_options, settings_from_config
from consolidator.core.algorithm_options import check_options
from consolidator.core.algorithms.base import Ranker
from consolidator.core.algorithms.catalog import ALGORITHMS
from consolidator.core.constraints import UsageModel
from consolidator.core.errors import UsageError
from consolidator.core.model import Cluster
from consolidator.core.plan import Move, PlanDraft, StoredPlan
from consolidator.core.planner import PlanSettings
from consolidator.core.rankings.catalog import get_ranking
from consolidator.core.wording import plural
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


def validate_request(ctx: AppContext, request: PlanRequest) -> None:
    """Fail early, in one line, on an unknown algorithm or ranking or a bad ranking option."""
    config = ctx.config
    algorithm = request.algorithm or config.get("planner", "algorithm")
    if algorithm != AUTO and algorithm not in ALGORITHMS.names():
        raise UsageError(f"unknown algorithm {algorithm!r}: choose one of "
                         f"{', '.join(sorted([AUTO, *ALGORITHMS.names()]))}")
    ranking = request.ranking if request.ranking is not None \
        else config.get("planner", "ranking")
    check_options(algorithm, ranking or None, request.options or {})
    get_ranking(ranking, request.options or {})


@dataclass(frozen=True)
class PlanInputs:
    """What a planner needs, merged from the snapshot, the config and the request."""

    cluster: Cluster
    algorithm: str
    settings: PlanSettings
    spare: int
    options: dict[str, Any]
    ranking: Ranker | None
    no_bmc: list[str]


def draft_plan(ctx: AppContext, snapshot: Snapshot, request: PlanRequest) -> PlanDraft:
    """Make and check a plan for a snapshot, as the config and the request say."""
    i = plan_inputs(ctx, snapshot, request)
    budget = budget_of(ctx.config, request)
    objective = request.objective or ctx.config.get("planner", "objective")
    args: dict[str, Any] = {"settings": i.settings, "spare": i.spare, "options": i.options,
                            "ranking": i.ranking, "no_bmc": i.no_bmc}
    if objective == "energy":
        check_energy_request(request)
        algorithm = FAST_ALGORITHMS[0] if i.algorithm == AUTO else i.algorithm
        draft = plan_for_objective(ctx, snapshot, i.cluster, algorithm, objective, **args)
        most = ctx.config.get("planner", "max_migrations")
        if most and len(draft.migrations) > most:
            draft = replace(draft, notes=(*draft.notes, (
                f"[planner] max_migrations = {most} does not apply with --objective energy: "
                f"{plural(len(draft.migrations), 'migration')}")))
        return draft
    if i.algorithm == AUTO or not budget.unlimited:
        return plan_for_objective(ctx, snapshot, i.cluster, i.algorithm, objective,
                                  hosts_planner=partial(plan_within_budget, budget=budget),
                                  **args)
    return plan_for_objective(ctx, snapshot, i.cluster, i.algorithm, objective, **args)


def plan_inputs(ctx: AppContext, snapshot: Snapshot, request: PlanRequest) -> PlanInputs:
    """The cluster (pooled with usage history for ucac), settings, options and ranking."""
    config = ctx.config
    algorithm = request.algorithm or config.get("planner", "algorithm")
    options = dict(request.options or {})
    confidence = request.confidence if request.confidence is not None \
        else config.get("planner", "confidence")
    ranking_name = request.ranking if request.ranking is not None \
        else config.get("planner", "ranking")
    ranking = get_ranking(ranking_name, {"confidence": confidence, **options})
    model = request.capacity_model or config.get("planner", "capacity_model")
    cluster = snapshot.cluster
    if model == "ucac" or ranking_name == "ucac":
        history = usage_history(ctx.engine(), snapshot.info.cloud,
                                before=snapshot.info.taken_at,
                                limit=config.get("telemetry", "history"))
        from consolidator.telemetry.prometheus import pooled_cluster

        cluster = pooled_cluster(cluster, history)
    settings = replace(settings_from_config(config), usage=UsageModel(
        confidence=confidence if model == "ucac" else None,
        fallback_mean=config.get("telemetry", "fallback_mean"),
        fallback_cov=config.get("telemetry", "fallback_cov")))
    spare = request.spare if request.spare is not None else config.get("planner", "spare")
    listed = ctx.bmc_hosts() if not snapshot.info.cloud.startswith("scenario:") else None
    no_bmc = [] if listed is None else [h.name for h in cluster.hosts
                                        if h.name not in listed and h.compute_host not in listed]
    return PlanInputs(cluster, algorithm, settings, spare,
                      algorithm_options(config, algorithm, cluster, options), ranking, no_bmc)


def make_plan(ctx: AppContext, snapshot: Snapshot, request: PlanRequest) -> StoredPlan:
    """Make, check and store a proposed plan for a snapshot."""
    draft = draft_plan(ctx, snapshot, request)
    config = ctx.config
    if (request.capacity_model or config.get("planner", "capacity_model")) == "ucac":
        confidence = request.confidence if request.confidence is not None \
            else config.get("planner", "confidence")
        # recorded with the plan, so that 'plans list' shows what was asked
        draft = replace(draft, options={**draft.options, "capacity_model": "ucac",
                                        "confidence": confidence})
    return save_plan(ctx.engine(), draft, cloud=snapshot.info.cloud,
                     snapshot_id=snapshot.info.id)


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
