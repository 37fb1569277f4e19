"""Making a plan: a snapshot, the config and what the operator asked, merged; then stored."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from consolidator.algorithms.base import get_algorithm
from consolidator.app.context import AppContext
from consolidator.app.settings import algorithm_options, settings_from_config
from consolidator.constraints import UsageModel
from consolidator.model import Cluster
from consolidator.options import check_options
from consolidator.plan import Move, PlanDraft, StoredPlan
from consolidator.planner import plan_cluster
from consolidator.rankings import get_ranking
from consolidator.store.plans import save_plan
from consolidator.store.snapshots import Snapshot, usage_history
from consolidator.telemetry import pooled_cluster


@dataclass(frozen=True)
class PlanRequest:
    """What to plan with; None means the config's value."""

    algorithm: str | None = None
    ranking: str | None = None
    spare: int | None = None
    capacity_model: str | None = None
    confidence: float | None = None
    options: dict[str, Any] | None = None


def validate_request(ctx: AppContext, request: PlanRequest) -> None:
    """Fail early, in one line, on an unknown algorithm or ranking or a bad ranking option."""
    config = ctx.config
    algorithm = request.algorithm or config.get("planner", "algorithm")
    get_algorithm(algorithm)
    ranking = request.ranking if request.ranking is not None \
        else config.get("planner", "ranking")
    check_options(algorithm, ranking or None, request.options or {})
    get_ranking(ranking, request.options or {})


def draft_plan(ctx: AppContext, snapshot: Snapshot, request: PlanRequest) -> PlanDraft:
    """Make and check a plan for a snapshot, as the config and the request say."""
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
        cluster = pooled_cluster(cluster, history)
    settings = replace(settings_from_config(config), usage=UsageModel(
        confidence=confidence if model == "ucac" else None,
        fallback_mean=config.get("telemetry", "fallback_mean"),
        fallback_cov=config.get("telemetry", "fallback_cov")))
    spare = request.spare if request.spare is not None else config.get("planner", "spare")
    listed = ctx.bmc_hosts() if not snapshot.info.cloud.startswith("scenario:") else None
    no_bmc = [] if listed is None else [h.name for h in cluster.hosts
                                        if h.name not in listed and h.compute_host not in listed]
    draft = plan_cluster(cluster, algorithm, settings=settings, spare=spare,
                         options=algorithm_options(config, algorithm, cluster, options),
                         ranking=ranking, no_bmc=no_bmc)
    if model == "ucac":     # recorded with the plan, so that 'plans list' shows what was asked
        draft = replace(draft, options={**draft.options, "capacity_model": model,
                                        "confidence": confidence})
    return draft


def make_plan(ctx: AppContext, snapshot: Snapshot, request: PlanRequest) -> StoredPlan:
    """Make, check and store a proposed plan for a snapshot."""
    draft = draft_plan(ctx, snapshot, request)
    return save_plan(ctx.engine(), draft, cloud=snapshot.info.cloud,
                     snapshot_id=snapshot.info.id)


def check_live(ctx: AppContext, plan: StoredPlan, cluster: Cluster) -> dict[str, str]:
    """Ask the live Placement about every move of a plan, as the executor will before each
    wave: per destination, all the instances the plan sends there. Instance name -> why
    Placement would refuse it (empty: every move passes)."""
    from consolidator import placement
    from consolidator.executor import demand_of

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
