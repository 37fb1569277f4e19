"""Plan a stored snapshot as the config says: the one path the CLI and the daemon share."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Engine

from consolidator.algorithms.ranking import get_ranking
from consolidator.config import Config
from consolidator.constraints import UsageModel
from consolidator.plan_config import algorithm_options, settings_from_config
from consolidator.planner import PlanDraft, make_plan
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


def plan_snapshot(engine: Engine, snapshot: Snapshot, config: Config,
                  request: PlanRequest) -> tuple[str, PlanDraft]:
    """Make, check and store a proposed plan for a snapshot; return its id and the draft."""
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
        history = usage_history(engine, snapshot.info.cloud, before=snapshot.info.taken_at,
                                limit=config.get("telemetry", "history"))
        cluster = pooled_cluster(cluster, history)
    settings = replace(settings_from_config(config), usage=UsageModel(
        confidence=confidence if model == "ucac" else None,
        fallback_mean=config.get("telemetry", "fallback_mean"),
        fallback_cov=config.get("telemetry", "fallback_cov")))
    spare = request.spare if request.spare is not None else config.get("planner", "spare")
    draft = make_plan(cluster, algorithm, settings=settings, spare=spare,
                      options=algorithm_options(config, algorithm, cluster, options),
                      ranking=ranking)
    plan_id = save_plan(engine, draft, cloud=snapshot.info.cloud, snapshot_id=snapshot.info.id)
    return plan_id, draft
