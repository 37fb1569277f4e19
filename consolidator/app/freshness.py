"""How fresh a plan is: its snapshot's age, and how far the live cloud has drifted from it.

``apply`` states both before it runs a plan and refuses a plan whose cloud drifted beyond
``[executor] max_drift`` percent of its instances (moved, gone or new since the snapshot);
``apply --replan`` plans again from a fresh snapshot instead, with the same choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from consolidator.app.context import AppContext
from consolidator.app.settings import freshness_settings
from consolidator.core.errors import ConsolidatorError, UsageError
from consolidator.core.wording import duration, plural

if TYPE_CHECKING:
    from consolidator.app.planning import PlanRequest
    from consolidator.core.model import Cluster
    from consolidator.core.plan import PlanDraft, StoredPlan
    from consolidator.openstack.inventory import Inventory


class StalePlanError(ConsolidatorError):
    """The live cloud drifted too far from the plan's snapshot to run the plan."""


@dataclass(frozen=True)
class Drift:
    """A plan's snapshot against the live cloud."""

    snapshot_id: str
    taken_at: datetime
    age_s: float
    moved: int
    gone: int
    added: int
    instances: int

    @property
    def changed(self) -> int:
        """Instances moved, gone or new since the snapshot."""
        return self.moved + self.gone + self.added

    @property
    def percent(self) -> float:
        """What changed, as a percentage of the snapshot's instances."""
        return 100.0 * self.changed / max(self.instances, 1)

    def line(self) -> str:
        """'snapshot S taken 31 min 2 s ago; the live cloud differs in 12 of 203 instances
        (5.9 %: 10 moved, 2 gone, 0 new)'."""
        return (f"snapshot {self.snapshot_id} taken {duration(self.age_s)} ago "
                f"({self.taken_at:%Y-%m-%d %H:%M:%S} UTC); the live cloud differs in "
                f"{self.changed} of {plural(self.instances, 'instance')} ({self.percent:.1f} %: "
                f"{self.moved} moved, {self.gone} gone, {self.added} new)")


def age_of(taken_at: datetime, now: datetime | None = None) -> float:
    """Seconds since a snapshot was taken."""
    return ((now or datetime.now(timezone.utc)) - taken_at).total_seconds()


def compare(snapshot: Cluster, live: Cluster) -> tuple[int, int, int]:
    """(moved, gone, new) instances of the live cloud against a snapshot, by instance id."""
    was = {i.id: i.host for i in snapshot.instances}
    now = {i.id: i.host for i in live.instances}
    moved = sum(1 for i, host in now.items() if i in was and was[i] != host)
    return moved, len(was.keys() - now.keys()), len(now.keys() - was.keys())


def measure_drift(ctx: AppContext, plan: StoredPlan) -> tuple[Drift, Inventory]:
    """Read the live cloud and compare it with the plan's snapshot."""
    from consolidator.app.snapshots import get_snapshot, read_cloud

    snap = get_snapshot(ctx, plan.snapshot_id)
    inventory = read_cloud(ctx, ctx.cloud_name or plan.cloud)
    moved, gone, added = compare(snap.cluster, inventory.cluster)
    return Drift(snap.info.id, snap.info.taken_at, age_of(snap.info.taken_at), moved, gone,
                 added, len(snap.cluster.instances)), inventory


def check_fresh(ctx: AppContext, plan: StoredPlan, *, replan: bool) -> StoredPlan | None:
    """Say the plan's snapshot age and drift; refuse a plan drifted beyond [executor]
    max_drift (StalePlanError), or with replan make a fresh plan with the same choices and
    return it (the stale one is cancelled). None: the plan may run as it is."""
    limit = freshness_settings(ctx.config)
    drift, inventory = measure_drift(ctx, plan)
    ctx.report(drift.line())
    if limit <= 0 or drift.percent <= limit:
        return None
    why = (f"the live cloud has drifted {drift.percent:.1f} % from plan {plan.id}'s snapshot "
           f"(more than [executor] max_drift = {limit:g} %)")
    if not replan:
        raise StalePlanError(f"{why}: re-plan from a fresh snapshot ('consolidator plan'), or "
                             f"give --replan to do it now")
    return _replan(ctx, plan, inventory, why)


def _replan(ctx: AppContext, plan: StoredPlan, inventory: Inventory, why: str) -> StoredPlan:
    """A fresh snapshot from the inventory just read, and a plan of it made as the stale
    plan was (request_of); the stale plan is cancelled."""
    from consolidator.app.planning import make_plan, validate_request
    from consolidator.app.review import cancel
    from consolidator.app.snapshots import store_inventory

    request = request_of(plan.draft)
    try:
        validate_request(ctx, request)
    except UsageError as error:   # the config changed under the plan: say so, do not guess
        raise StalePlanError(f"{why}; it cannot be planned again as it was made: {error}: "
                             f"re-plan with 'consolidator plan'") from None
    snapshot = store_inventory(ctx, inventory)
    fresh = make_plan(ctx, snapshot, request)
    cancel(ctx, plan.id, reason=f"replanned as {fresh.id}: {why}")
    ctx.report(f"{why}: replanned as {fresh.id} from snapshot {snapshot.info.id} "
               f"({plural(len(fresh.draft.migrations), 'migration')}, "
               f"{plural(len(fresh.draft.power_off), 'host')} to power off)")
    return fresh


#: Recorded options that are not algorithm options: the request's own fields, or what the
#: planner derives from the config ([zones]).
_NOT_OPTIONS = ("capacity_model", "confidence", "scope", "zones")


def request_of(draft: PlanDraft) -> PlanRequest:
    """The request a plan was made with, from what is stored with it: the algorithm asked
    (auto, or the one a budget ran), ranking, spare hosts, options, capacity model, scope,
    objective and budget (--max-migrations, --max-moved-gib, --target-hosts). Options the
    asked algorithm does not take (those a budget's search recorded, e.g. hvp's light) are
    left to the planner, as they were the first time."""
    from consolidator.app.planning import PlanRequest
    from consolidator.core.algorithm_options import valid_options

    recorded = draft.options
    budget = dict(draft.choice.get("budget") or {})
    algorithm = str(draft.choice.get("asked") or draft.algorithm)
    try:
        keys = valid_options(algorithm, draft.ranking)
    except UsageError:   # not a planner's (a rollback): validate_request says so
        keys = {}
    return PlanRequest(
        algorithm=algorithm, ranking=draft.ranking, spare=draft.spare,
        options={k: v for k, v in recorded.items() if k in keys and k not in _NOT_OPTIONS},
        capacity_model=str(recorded.get("capacity_model") or "placement"),
        confidence=recorded.get("confidence"),
        scope=str(recorded.get("scope") or ""), objective=draft.objective,
        max_migrations=budget.get("max_migrations"), max_moved_gib=budget.get("max_moved_gib"),
        target_hosts=budget.get("target_hosts"))
