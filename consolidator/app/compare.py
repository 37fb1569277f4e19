"""Candidate plans side by side: what each asks for and what each saves."""

from __future__ import annotations

from dataclasses import dataclass

from consolidator.app.context import AppContext
from consolidator.core.model import Cluster
from consolidator.core.plan import StoredPlan
from consolidator.render.asked import asked_for
from consolidator.store.plans import load_plan
from consolidator.store.snapshots import load_snapshot


@dataclass(frozen=True)
class PlanFigures:
    """One plan's row of a comparison."""

    id: str
    status: str
    algorithm: str
    asked: str
    hosts_before: int
    hosts_after: int
    lower_bound: int
    migrations: int
    gib_moved: float
    watts_saved: float

    def to_json(self) -> dict[str, object]:
        """The row as JSON."""
        return dict(self.__dict__)


def watts_saved(ctx: AppContext, plan: StoredPlan, cluster: Cluster) -> float:
    """The watts a plan saves: the one place a comparison takes its energy figure from (for
    now the plan's own estimate, idle watts per host powered off)."""
    return plan.draft.watts_saved


def gib_moved(plan: StoredPlan, cluster: Cluster) -> float:
    """GiB of instance memory the plan's live migrations copy."""
    index = cluster.instance_index
    return sum(cluster.instances[index[m.instance_id]].memory_mb
               for m in plan.draft.migrations if m.instance_id in index) / 1024


def compare_plans(ctx: AppContext, refs: list[str]) -> list[PlanFigures]:
    """Each plan's figures, in the order given (ids or unique prefixes)."""
    engine = ctx.engine()
    rows = []
    for ref in refs:
        plan = load_plan(engine, ref)
        cluster = load_snapshot(engine, plan.snapshot_id).cluster
        d = plan.draft
        rows.append(PlanFigures(
            id=plan.id, status=plan.status, algorithm=d.algorithm,
            asked=asked_for(d.algorithm, d.ranking, d.options, d.choice),
            hosts_before=d.hosts_before, hosts_after=d.hosts_after,
            lower_bound=d.lower_bound, migrations=len(d.migrations),
            gib_moved=gib_moved(plan, cluster), watts_saved=watts_saved(ctx, plan, cluster)))
    return rows
