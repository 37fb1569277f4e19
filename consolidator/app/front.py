"""The front of hosts against migrations for a snapshot: per algorithm, its best trade-offs."""

from __future__ import annotations

from consolidator.app.context import AppContext
from consolidator.app.planning import PlanRequest, plan_inputs
from consolidator.core.front import AUTO, FEWEST, FRONT_ALGORITHMS, FrontBuilder, FrontPoint
from consolidator.core.front_budgets import front
from consolidator.store.snapshots import Snapshot


def front_of(ctx: AppContext, snapshot: Snapshot,
             request: PlanRequest) -> dict[str, list[FrontPoint]]:
    """Per algorithm (the fast ones and the fewest-migrations choice for auto), its checked,
    non-dominated plans; nothing is stored."""
    i = plan_inputs(ctx, snapshot, request)
    builder = FrontBuilder(i.cluster, i.settings, spare=i.spare, options=i.options,
                           ranking=i.ranking, no_bmc=i.no_bmc)
    algorithms = (*FRONT_ALGORITHMS, FEWEST) if i.algorithm == AUTO else (i.algorithm, FEWEST)
    return front(builder, algorithms, fast=i.algorithm == AUTO)
