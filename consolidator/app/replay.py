"""Replaying a usage trace: the reference policies in the pure simulator, and the daemon as
configured ('consolidator'), each over the same trace, data centre and simulated clock.

The consolidator policy runs the daemon's cycle at each time its [daemon] schedule fires on
the simulated clock: a snapshot of the replay's cloud (with each VM's CPU statistics over the
samples since the previous cycle, as telemetry gives them) stored by ``store_inventory``, the
spare-host target of the [padding] windows (``spare_target``), the plan of ``make_plan``
(the config's algorithm, ranking, capacity model, confidence and budget), then the plan
approved and run by the real executor (``PlanRun``) against the dry run's simulated cloud
seeded with the replay's state: migrations, disables and power-offs through the guarded path.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from consolidator.app.apply import PlanRun
from consolidator.app.context import AppContext
from consolidator.app.history import HistoryRange, history_trace
from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.replay_relief import relieve_step
from consolidator.app.review import approve
from consolidator.app.settings import cron_trigger, daemon_settings
from consolidator.app.snapshots import store_inventory
from consolidator.core.errors import ConsolidatorError, ModelError, UsageError
from consolidator.core.model import Cluster, Host
from consolidator.core.padding import parse_windows, spare_target
from consolidator.core.replay.cloud_model import (
    cluster_at,
    replay_hosts,
    replay_instances,
    usage_window,
)
from consolidator.core.replay.policy import Policy, replay
from consolidator.core.replay.reference import (
    NoPowerManagement,
    initial_placement,
    reference_policy,
)
from consolidator.core.replay.trace import floor_kwh
from consolidator.core.wording import plural

if TYPE_CHECKING:
    from consolidator.core.replay.datacentre import DataCentre
    from consolidator.core.replay.metrics import ReplayResult
    from consolidator.core.replay.trace import Trace

#: The policies of a replay, in the order of its rows.
POLICIES = ("npa", "thr-mmt-0.8", "lr-mmt-1.2", "consolidator")
#: Where the replay's simulated clock starts when the trace does not say.
START = datetime(2011, 3, 3)


@dataclass
class ConsolidatorPolicy:
    """The daemon as configured, on the replay's clock (see the module's docstring).

    step() runs cycle() whenever the schedule fires; what the daemon does between cycles
    (a capacity watch, relief) belongs in step() too, acting on the same state: the
    placement (host row per VM) and ``state`` (row -> Host with its power and service)."""

    ctx: AppContext
    start_at: datetime = START
    name: str = "consolidator"
    full_power: bool = False
    cycles: int = 0
    failures: list[str] = field(default_factory=list)

    def start(self, trace: Trace, dc: DataCentre) -> tuple[np.ndarray, np.ndarray]:
        """CloudSim's initial placement on a data centre whose hosts are all on."""
        self.trace, self.dc = trace, dc
        self.hosts, self.instances = replay_hosts(dc), replay_instances(trace, dc)
        self.row = {h.name: i for i, h in enumerate(self.hosts)}
        self.vm_row = {inst.id: v for v, inst in enumerate(self.instances)}
        self.state: dict[int, Host] = {}
        self.settings = daemon_settings(self.ctx.config)
        self.windows = parse_windows(self.settings.padding)
        self.trigger = cron_trigger(self.ctx.config)
        zone = self.trigger.timezone
        start = self.start_at
        self.clock0 = zone.localize(start) if hasattr(zone, "localize") else \
            start.replace(tzinfo=zone)
        self.due = self.trigger.get_next_fire_time(None, self.clock0)
        self.last = 0
        return initial_placement(trace, dc), np.ones(dc.hosts, dtype=bool)

    def notes(self) -> tuple[str, ...]:
        """How many cycles ran, and any that failed."""
        notes = [f"consolidator: {self.cycles} daemon cycles ({self.settings.schedule!r}), "
                 f"each plan applied (as with [daemon] auto_apply), and "
                 f"{plural(getattr(self, 'reliefs', 0), 'relief')} of overloaded hosts"]
        return tuple(notes + self.failures[:3])

    def _on(self) -> np.ndarray:
        return np.array([self.state.get(h, host).power != "off"
                         for h, host in enumerate(self.hosts)], dtype=bool)

    def step(self, k: int, placement: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run the daemon's cycle if its schedule fires at sample k, then relief if [relief]
        interval falls due (app/replay_relief.py)."""
        now = self.clock0 + timedelta(seconds=k * self.trace.step_s)
        if self.due is not None and self.due <= now:
            try:
                placement = self.cycle(k, now, placement)
            except ConsolidatorError as exc:    # the daemon logs it and runs the next cycle
                self.failures.append(f"cycle at {now:%H:%M} failed: {exc}")
            self.due = self.trigger.get_next_fire_time(self.due, now + timedelta(seconds=1))
            while self.due is not None and self.due <= now:
                self.due = self.trigger.get_next_fire_time(self.due, self.due)
        try:
            placement = relieve_step(self, k, now, placement)
        except ConsolidatorError as exc:    # as the daemon's relief watch: logged, next time
            self.failures.append(f"relief at {now:%H:%M} failed: {exc}")
        return placement, self._on()

    def cycle(self, k: int, now: datetime, placement: np.ndarray) -> np.ndarray:
        """The daemon's cycle: snapshot, padding, plan, apply; the placement after it."""
        from consolidator.openstack.inventory import Inventory

        self.cycles += 1
        mean, std = usage_window(self.trace, self.last + 1 if self.cycles > 1 else 0, k)
        self.last = k
        cluster = cluster_at(self.hosts, self.instances, placement, self.state, mean, std)
        snap = store_inventory(self.ctx, Inventory(cluster, "replay", "2.88",
                                                   cloud="replay"))
        target = spare_target(self.windows, now, self.settings.spare)
        plan = make_plan(self.ctx, snap, PlanRequest(spare=target))
        if not (plan.draft.migrations or plan.draft.power_off):
            return placement
        approve(self.ctx, plan.id, reason="auto_apply")
        return self.run_plan(snap.cluster, plan.id, f"cycle at {now:%H:%M}", placement)

    def run_plan(self, cluster: Cluster, plan_id: str, what: str, placement: np.ndarray
                 ) -> np.ndarray:
        """Run an approved plan with the real executor against the replay's simulated cloud
        seeded from `cluster`; the placement after it (the hosts' power and service kept)."""
        from consolidator.execution.replay_cloud import replay_cloud, settled

        nova, lookup, drivers = replay_cloud(cluster)
        outcome = PlanRun(self.ctx, plan_id, cloud=(nova, lookup)).run()
        if not outcome.ok:
            self.failures.append(f"{what}: plan {plan_id} did not finish "
                                 f"({len(outcome.failed)} failed, {len(outcome.skipped)} "
                                 f"skipped, {len(outcome.left_on)} left on)")
        moved, hosts = settled(nova, drivers, cluster)
        placement = placement.copy()
        for server, host in moved.items():
            placement[self.vm_row[server]] = self.row[host]
        for name, host in hosts.items():
            self.state[self.row[name]] = host
        return placement


def replay_context(ctx: AppContext) -> tuple[AppContext, Any]:
    """A context with ctx's config and a throw-away database (and what keeps it)."""
    from sqlalchemy import event

    from consolidator.store.db import make_engine, upgrade

    scratch = tempfile.TemporaryDirectory(prefix="consolidator-replay-")
    engine = make_engine(f"sqlite:///{scratch.name}/replay.db")

    @event.listens_for(engine, "connect")
    def _throwaway(dbapi_conn: Any, _record: object) -> None:
        """A throw-away database need not survive a crash: no fsync."""
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA synchronous=OFF")
        cursor.close()
    upgrade(engine)
    return AppContext(cloud="replay", power=lambda _name: None, _config=ctx.config,
                      _engine=engine), scratch


def make_policy(name: str, ctx: AppContext | None = None,
                start: datetime = START) -> Policy:
    """A policy by name: npa, consolidator (needs ctx), thr-mmt-X or lr-mmt-X."""
    if name == "npa":
        return NoPowerManagement()
    if name == "consolidator":
        if ctx is None:
            raise UsageError("the consolidator policy needs a context (its config)")
        return ConsolidatorPolicy(ctx, start)
    return reference_policy(name)


def run_policy(trace: Trace, dc: DataCentre, name: str, ctx: AppContext | None = None,
               start: datetime = START) -> ReplayResult:
    """One policy over a trace on a data centre: its metrics. The consolidator policy uses
    ctx's config and a throw-away database of its own."""
    if name != "consolidator":
        return replay(trace, dc, make_policy(name))
    if ctx is None:
        raise UsageError("the consolidator policy needs a context (its config)")
    rctx, scratch = replay_context(ctx)
    try:
        return replay(trace, dc, make_policy(name, rctx, start))
    finally:
        rctx.engine(migrated=False).dispose()
        scratch.cleanup()


def run_replay(ctx: AppContext, trace: Trace, dc: DataCentre, policies: tuple[str, ...],
               start: datetime = START) -> dict[str, Any]:
    """Several policies over one trace: the floor, the sizes, and each policy's result."""
    for name in policies:     # fail before any long run
        if name not in ("npa", "consolidator"):
            try:
                reference_policy(name)
            except ModelError as exc:
                raise UsageError(str(exc)) from None
    results = []
    for name in policies:
        ctx.report(f"replaying {name} ...")
        results.append(run_policy(trace, dc, name, ctx, start))
    return {"floor_kwh": round(floor_kwh(trace, dc.best_joules_per_mip), 3),
            "hosts": dc.hosts, "vms": trace.vms, "steps": trace.steps, "step_s": trace.step_s,
            "results": results}


def sample_folder() -> str:
    """The shipped sample: 50 VMs of PlanetLab's 2011-03-03."""
    from importlib.resources import files

    return str(files("consolidator") / "data" / "planetlab-sample" / "20110303-50")


def replay_trace(ctx: AppContext, *, planetlab: str | None = None,
                 trace_file: str | None = None, hosts_file: str | None = None,
                 hosts: int = 800, vms: int | None = None,
                 policies: tuple[str, ...] | None = None,
                 history: HistoryRange | None = None) -> dict[str, Any]:
    """'consolidator simulate trace': load the trace (a PlanetLab folder, a trace file or an
    operator's Prometheus history) and the data centre, replay the policies (default:
    all)."""
    from consolidator.core.replay.datacentre import cloudsim_datacentre
    from consolidator.scenario.traces import load_host_models, load_planetlab, load_trace_file

    given = [flag for flag, value in (("--planetlab", planetlab), ("--trace", trace_file),
                                      ("--prometheus", history)) if value]
    if len(given) > 1:
        raise UsageError(f"give one of --planetlab, --trace and --prometheus, not "
                         f"{' and '.join(given)}")
    start = START
    if history is not None:
        trace = history_trace(ctx, history)
        trace = trace.head(vms) if vms else trace
        start = history.start.replace(tzinfo=None)
    elif trace_file:
        trace = load_trace_file(trace_file)
        trace = trace.head(vms) if vms else trace
    else:
        if not planetlab:
            ctx.report(f"no trace given: replaying the shipped sample {sample_folder()}")
        trace = load_planetlab(planetlab or sample_folder(), vms=vms)
    dc = load_host_models(hosts_file) if hosts_file else cloudsim_datacentre(hosts)
    return run_replay(ctx, trace, dc, tuple(policies or POLICIES), start)
