"""Rollback: read the live cloud and store the plan that puts it back as a snapshot was."""

from __future__ import annotations

from dataclasses import dataclass

from consolidator.app.context import AppContext
from consolidator.app.settings import settings_from_config
from consolidator.app.snapshots import read_cloud, store_inventory
from consolidator.core.errors import UsageError
from consolidator.core.model import Cluster
from consolidator.core.plan import StoredPlan
from consolidator.core.rollback_plan import rollback_draft
from consolidator.store import journal
from consolidator.store.plans import list_plans, load_plan, save_plan
from consolidator.store.snapshots import Snapshot, load_snapshot


@dataclass(frozen=True)
class PreparedRollback:
    """A stored rollback plan (None when the cloud already matches) and what it came from."""

    target: Snapshot
    live: Cluster
    notes: tuple[str, ...]
    plan: StoredPlan | None

    @property
    def plan_id(self) -> str | None:
        """The rollback plan's id, or None when there is nothing to do."""
        return self.plan.id if self.plan is not None else None


def powered_off_by_us(ctx: AppContext, cloud: str) -> set[str]:
    """The hosts whose power-off consolidator journaled (and made) in a cloud."""
    return {e.target for e in journal.entries(ctx.engine(), cloud=cloud)
            if e.action == "power_off" and e.state == journal.SUCCEEDED}


def bmc_power(ctx: AppContext, cluster: Cluster) -> dict[str, str]:
    """Each host's power as its BMC reads it (hosts without a BMC are left out; a BMC that
    cannot be read counts as unknown)."""
    from consolidator.power.driver import read_power

    lookup = ctx.power_lookup()
    drivers = {host.name: lookup(host.name) for host in cluster.hosts}
    return {name: read_power(driver) for name, driver in drivers.items() if driver is not None}


def prepare_rollback(ctx: AppContext, snapshot_ref: str, *, partial: bool = False
                     ) -> PreparedRollback:
    """Read the live cloud and store the proposed plan back to the snapshot; it powers on
    only hosts consolidator powered off, and with partial moves back only what fits."""
    engine = ctx.engine()
    target = load_snapshot(engine, snapshot_ref)
    inventory = read_cloud(ctx, ctx.cloud_name or target.info.cloud)
    live = inventory.cluster
    draft = rollback_draft(target.cluster, live,
                           per_host_limit=settings_from_config(ctx.config).per_host_limit,
                           ours=powered_off_by_us(ctx, inventory.cloud), partial=partial,
                           target_id=target.info.id, bmc_power=bmc_power(ctx, live))
    if not draft.migrations and not draft.power_on:
        return PreparedRollback(target, live, draft.notes, None)
    snapshot = store_inventory(ctx, inventory, source_suffix=" (before rollback)")
    plan = save_plan(engine, draft, cloud=snapshot.info.cloud, snapshot_id=snapshot.info.id)
    return PreparedRollback(target, live, draft.notes, plan)


def interrupted_rollback(ctx: AppContext, snapshot_ref: str) -> StoredPlan:
    """The newest rollback plan to this snapshot that a crash, a signal or a failure left
    running or failed: what 'rollback --resume' continues."""
    engine = ctx.engine()
    target = load_snapshot(engine, snapshot_ref)
    for row in list_plans(engine, status=None, limit=1000):
        if row.algorithm != "rollback" or row.status not in ("running", "failed"):
            continue
        plan = load_plan(engine, row.id)
        if plan.draft.options.get("target_snapshot") == target.info.id:
            return plan
    raise UsageError(f"no interrupted rollback to snapshot {target.info.id}: start one with "
                     f"'consolidator rollback {target.info.id}'")
