"""Host maintenance: drain hosts (a stored, reviewable plan run by the executor) and undrain
them (power on first if the drain powered them off, then enable; journaled, under the
executor lease)."""

from __future__ import annotations

from dataclasses import dataclass

from consolidator.app.context import AppContext, host_driver
from consolidator.app.leadership import executor_cloud
from consolidator.app.notify import notify
from consolidator.app.power import resolve_host
from consolidator.app.settings import executor_settings, settings_from_config
from consolidator.app.snapshots import read_cloud, record_snapshot
from consolidator.core.errors import ConsolidatorError, UsageError
from consolidator.core.host_gate import UNDRAIN
from consolidator.core.maintenance import DrainSettings, drain_draft, drained_by
from consolidator.core.model import Cluster
from consolidator.core.plan import PlanDraft, StoredPlan
from consolidator.execution.gate import Gate
from consolidator.execution.host_power import GuardedPower
from consolidator.execution.lease_keeper import LeaseKeeper
from consolidator.openstack.nova import Nova
from consolidator.store.plans import load_plan
from consolidator.store.snapshots import Snapshot


@dataclass(frozen=True)
class DrainRequest:
    """The hosts to drain (names, or every host of an aggregate), and whether they power off
    once empty."""

    hosts: tuple[str, ...] = ()
    aggregate: str | None = None
    power_off: bool = False


def drain_hosts_of(cluster: Cluster, request: DrainRequest) -> list[str]:
    """The hypervisor names a request means; UsageError when it names none or an unknown
    host or aggregate."""
    names = [resolve_host(cluster, name).name for name in request.hosts]
    if request.aggregate is not None:
        members = [h.name for h in cluster.hosts if request.aggregate in h.aggregates]
        if not members:
            raise UsageError(f"no compute host is in the aggregate {request.aggregate!r}")
        names += members
    if not names:
        raise UsageError("name the hosts to drain, or give --aggregate NAME")
    return list(dict.fromkeys(names))


def plan_drain(ctx: AppContext, request: DrainRequest) -> tuple[StoredPlan, Snapshot]:
    """Snapshot the cloud and store the checked drain plan, proposed; a UsageError or
    DrainBlocked (nothing stored, not even the snapshot) when a host is unknown, has no BMC
    for --power-off, or holds an instance that cannot leave."""
    from consolidator.store.plans import save_plan

    if not request.hosts and request.aggregate is None:
        raise UsageError("name the hosts to drain, or give --aggregate NAME")
    settings = settings_from_config(ctx.config)
    drain_settings = DrainSettings(rules=settings.rules,
                                   per_host_limit=settings.per_host_limit,
                                   power_off=request.power_off)

    def checked_draft(cluster: Cluster) -> PlanDraft:
        names = drain_hosts_of(cluster, request)
        if request.power_off:
            lookup = ctx.power_lookup()
            missing = [n for n in names
                       if host_driver(lookup, cluster.hosts[cluster.host_index[n]]) is None]
            if missing:
                raise UsageError(f"--power-off: no BMC is configured for "
                                 f"{', '.join(missing)} in the BMC file; drain without "
                                 f"--power-off")
        return drain_draft(cluster, names, drain_settings)

    def check(read: Cluster) -> None:     # everything checked before the snapshot is stored
        checked_draft(read)

    snapshot, _ = record_snapshot(ctx, check=check)
    draft = checked_draft(snapshot.cluster)   # the plan of the snapshot as stored
    from consolidator.app.audit import actor_of

    stored = save_plan(ctx.engine(), draft, cloud=snapshot.info.cloud,
                       snapshot_id=snapshot.info.id, created_by=actor_of(ctx).to_json())
    notify(ctx, "plan.proposed", plan=stored)
    return stored, snapshot


def undrain(ctx: AppContext, names: tuple[str, ...]) -> list[str]:
    """Bring drained hosts back: power on first where the drain powered it off (the BMC
    reads off), then enable; each step journaled under the drain's plan. One line per
    host. UsageError for a host no drain disabled."""
    inventory = read_cloud(ctx)
    cluster = inventory.cluster
    hosts = [resolve_host(cluster, name) for name in names]
    if not hosts:
        raise UsageError("name the hosts to undrain")
    plans = {}
    for host in hosts:
        plan_id = drained_by(host.disabled_reason)
        if host.status != "disabled" or plan_id is None:
            state = f"disabled ({host.disabled_reason or 'no reason'})" \
                if host.status == "disabled" else host.status
            raise UsageError(f"{host.name} is not drained: its nova-compute is {state}")
        plans[host.name] = load_plan(ctx.engine(), plan_id)
    settings = executor_settings(ctx.config)
    cloud = executor_cloud(ctx)
    lines = []
    nova = Nova(ctx.connect())
    gate = Gate(ctx.engine(), nova, cloud, ctx.power_lookup(), actor=UNDRAIN,
                report=ctx.report, pending_s=settings.power_timeout,
                wait_s=settings.power_timeout,
                poll=max(min(settings.poll_interval, 1.0), 0.05))
    with LeaseKeeper(ctx.engine(), cloud, settings.lease_ttl, key=gate.key,
                     report=ctx.report) as guard:
        guarded = GuardedPower(ctx.engine(), nova, cloud, ctx.report,
                               settings.power_timeout, settings.poll_interval, guard=guard,
                               gate=gate)
        for host in hosts:
            plan = plans[host.name]
            driver = host_driver(ctx.power_lookup(), host)
            if host.name in plan.draft.power_off and driver is None:
                raise UsageError(f"{host.name} was drained with --power-off and no BMC is "
                                 f"configured for it in the BMC file")
            powered: list[bool] = []
            gate.plan_id = plan.id
            problem = guarded.power_on(plan.id, host, driver, powered)
            if problem is not None:
                raise ConsolidatorError(f"{host.name} is not back: {problem}")
            if powered:
                notify(ctx, "power.on", plan_id=plan.id, host=host.name, state="succeeded",
                       result="powered on by hosts undrain")
            notify(ctx, "host.undrained", plan_id=plan.id, host=host.name,
                   powered_on=bool(powered))
            lines.append(f"{host.name}: {'powered on and ' if powered else ''}enabled "
                         f"(drained by plan {plan.id})")
    return lines
