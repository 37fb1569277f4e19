"""Budgets: the operator's limits on a plan's migrations, GiB moved and hosts left on."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from consolidator.app.config import Config
from consolidator.core.errors import UsageError
from consolidator.core.front import AUTO, FAST_ALGORITHMS, Budget, FrontBuilder, plan_within
from consolidator.core.model import Cluster
from consolidator.core.plan import PlanDraft

if TYPE_CHECKING:
    from consolidator.app.planning import PlanRequest
    from consolidator.core.algorithms.base import Ranker
    from consolidator.core.planner import PlanSettings

__all__ = ["AUTO", "FAST_ALGORITHMS", "budget_of", "check_energy_request",
           "plan_within_budget"]


def budget_of(config: Config, request: PlanRequest) -> Budget:
    """The request's limits; migrations default to [planner] max_migrations (0: none)."""
    configured = config.get("planner", "max_migrations")
    most = request.max_migrations if request.max_migrations is not None \
        else (configured if configured > 0 else None)
    return Budget(max_migrations=most, max_moved_gib=request.max_moved_gib,
                  target_hosts=request.target_hosts)


def check_energy_request(request: PlanRequest) -> None:
    """Budgets pick among plans by hosts freed: not with --objective energy (UsageError).
    [planner] max_migrations does not apply to it; -a auto plans with zoned-bestfit."""
    if request.max_migrations is not None or request.max_moved_gib is not None \
            or request.target_hosts is not None:
        raise UsageError("--max-migrations, --max-moved-gib and --target-hosts work with "
                         "--objective hosts: drop them or the energy objective")


def plan_within_budget(cluster: Cluster, algorithm: str, budget: Budget, *,
                       settings: PlanSettings, spare: int, options: dict[str, Any],
                       ranking: Ranker | None, no_bmc: Collection[str]) -> PlanDraft:
    """The checked plan of the algorithm (auto: the fast ones) that frees the most hosts
    within the budget; draft.choice says which won and why."""
    builder = FrontBuilder(cluster, settings, spare=spare, options=options, ranking=ranking,
                           no_bmc=no_bmc)
    return plan_within(builder, algorithm, budget)
