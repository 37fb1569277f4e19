"""Replaying a usage trace: the reference policies in the pure simulator, and the daemon as
configured ('consolidator'), each over the same trace, data centre and simulated clock.

The consolidator policy calls the daemon's own functions (app/cycle.py) with ports
(``CloudPorts``) onto the replay's cloud: at each time its [daemon] schedule fires on the
simulated clock, ``run_cycle`` (snapshot with each VM's CPU statistics over the samples since
the previous cycle, or the last [telemetry] min_samples when the cycles come sooner, as
telemetry gives them, with min_samples' prior where the trace holds too few, as at the
day's first cycle; the [padding] spare target; ``make_plan`` with
the config's algorithm, ranking, capacity model, confidence and budget; the plan approved and
run by the real executor, ``PlanRun``, against the dry run's simulated cloud seeded with the
replay's state; the morning ramp); between cycles, every [daemon] capacity_watch_interval,
``capacity_watch_once`` (the ramp on free capacity, then usage at confidence with its trend,
the usage read from the trace over the [relief] queries' windows); and every [relief]
interval, relief (app/relief.py relieve_now, with the same usage reads), which at a cycle
runs at its end through the cycle's relieve port, as in the daemon. Plans are applied as
with [daemon] auto_apply on. With CloudSim's workload (the reference rows' too), a VM that
ends is deleted from the cloud the daemon reads.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from consolidator.app.apply import PlanRun
from consolidator.app.context import AppContext
from consolidator.app.cycle import CloudPorts, capacity_watch_once, run_cycle
from consolidator.app.history import HistoryRange, history_trace
from consolidator.app.relief import ReliefRun, relieve_now
from consolidator.app.settings import (
    cron_trigger,
    daemon_settings,
    inventory_settings,
    relief_settings,
)
from consolidator.app.snapshots import store_inventory
from consolidator.app.usage_power import UsageReads
from consolidator.core.errors import ConsolidatorError, ModelError, UsageError
from consolidator.core.model import Host
from consolidator.core.padding import parse_windows, spare_target
from consolidator.core.replay.bound import allocation_floor_steps
from consolidator.core.replay.cloud_model import (
    CPU_UNIT_MIPS,
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
from consolidator.core.replay.trace import end_steps, ended_note, floor_steps
from consolidator.core.short_window import short_window_std
from consolidator.core.usage_power import predicted_rise
from consolidator.core.wording import plural

if TYPE_CHECKING:
    from consolidator.app.apply import Outcome
    from consolidator.app.settings import ReliefSettings
    from consolidator.core.replay.datacentre import DataCentre
    from consolidator.core.replay.metrics import ReplayResult
    from consolidator.core.replay.trace import Trace
    from consolidator.openstack.inventory import Inventory

_RANGE = re.compile(r"\[(\d+)([smhd])\]")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def window_steps(query: str, step_s: float, default_s: float) -> int:
    """The samples a query's range selector spans ([10m] at 300 s steps: 2), at least 1."""
    found = _RANGE.search(query)
    seconds = int(found.group(1)) * _UNIT[found.group(2)] if found else default_s
    return max(int(round(seconds / step_s)), 1)


#: The policies of a replay, in the order of its rows.
POLICIES = ("npa", "thr-mmt-0.8", "lr-mmt-1.2", "consolidator")
#: Where the replay's simulated clock starts when the trace does not say.
START = datetime(2011, 3, 3)


@dataclass
class ConsolidatorPolicy:
    """The daemon as configured, on the replay's clock (see the module's docstring). Its
    state: the placement (host row per VM) and ``state`` (row -> Host with its power and
    service), which the executor's runs change."""

    ctx: AppContext
    start_at: datetime = START
    name: str = "consolidator"
    full_power: bool = False
    #: CloudSim's workload, as the reference policies run it: a VM ends (is deleted) at its
    #: first two zero samples in a row (core/replay/trace.py end_steps).
    cloudsim_workload: bool = True
    cycles: int = 0
    watches: int = 0
    reliefs: int = 0
    #: Hosts powered on by the cycles' morning ramp and by the capacity watch.
    ramped: list[str] = field(default_factory=list)
    watched: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    #: Every migration the executor ran since the last sample: (VM row, destination row).
    made: list[tuple[int, int]] = field(default_factory=list)
    #: Migrations run by the cycles' plans and by relief.
    by_cycles: int = 0
    by_relief: int = 0
    relieving: bool = False

    def start(self, trace: Trace, dc: DataCentre) -> tuple[np.ndarray, np.ndarray]:
        """CloudSim's initial placement on a data centre whose hosts are all on."""
        self.trace, self.dc = trace, dc
        self.hosts, self.instances = replay_hosts(dc), replay_instances(trace, dc)
        self.row = {h.name: i for i, h in enumerate(self.hosts)}
        self.vm_row = {inst.id: v for v, inst in enumerate(self.instances)}
        self.state: dict[int, Host] = {}
        self.settings = replace(daemon_settings(self.ctx.config), auto_apply=True)
        self.min_samples = inventory_settings(self.ctx.config).min_samples
        self.windows = parse_windows(self.settings.padding)
        self.trigger = cron_trigger(self.ctx.config)
        zone = self.trigger.timezone
        start = self.start_at
        self.clock0 = zone.localize(start) if hasattr(zone, "localize") else \
            start.replace(tzinfo=zone)
        self.due = self.trigger.get_next_fire_time(None, self.clock0)
        self.last = 0
        self.placement = initial_placement(trace, dc)
        self.ends = end_steps(trace) if self.cloudsim_workload else \
            np.full(trace.vms, trace.steps + 1)
        self.usage = usage_window(trace, 0, 0)
        self.doing = ""
        self.now = self.clock0
        return self.placement.copy(), np.ones(dc.hosts, dtype=bool)

    def notes(self) -> tuple[str, ...]:
        """How many cycles ran, what powered hosts on, and any failures."""
        notes = [f"consolidator: {plural(self.cycles, 'daemon cycle')} "
                 f"({self.settings.schedule!r}), "
                 f"each plan applied (as with [daemon] auto_apply), "
                 f"{plural(self.reliefs, 'relief')} of overloaded hosts, "
                 f"{plural(self.by_cycles, 'migration')} by the cycles' plans and "
                 f"{self.by_relief:,} by relief, "
                 f"{plural(self.watches, 'capacity watch', 'capacity watches')}; "
                 f"{plural(len(self.ramped), 'host')} powered on by the morning ramp and "
                 f"{len(self.watched)} by the capacity watch"]
        return tuple(notes) + ended_note(self.name, self.trace, self.ends) + \
            tuple(self.failures[:3])

    def _on(self) -> np.ndarray:
        return np.array([self.state.get(h, host).power != "off"
                         for h, host in enumerate(self.hosts)], dtype=bool)

    def step(self, k: int, placement: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """At sample k: the daemon's cycle if its schedule fires (relief at its end, as
        run_cycle does), else the capacity watch if its interval falls due, then relief if
        [relief] interval falls due (the daemon skips both watches while a cycle runs)."""
        self.placement = placement.copy()
        self.placement[self.ends <= k] = -1       # ended: deleted from the cloud
        self.made = []
        now = self.now = self.clock0 + timedelta(seconds=k * self.trace.step_s)
        if self.due is not None and self.due <= now:
            self._guarded("cycle", now, lambda: self.cycle(k, now))
            self.due = self.trigger.get_next_fire_time(self.due, now + timedelta(seconds=1))
            while self.due is not None and self.due <= now:
                self.due = self.trigger.get_next_fire_time(self.due, self.due)
        else:
            if self.watch_due(k):
                self._guarded("capacity watch", now, lambda: self.watch(k, now))
            if self.relief_due(k):
                self._guarded("relief", now, lambda: self.relieve(k))
        return self.placement.copy(), self._on()

    def migrations_of_step(self) -> tuple[np.ndarray, np.ndarray]:
        """Every migration the executor ran at the last sample (VM rows, destination rows),
        a VM moved away and back counting twice: what the replay counts and charges."""
        pairs = np.array(self.made, dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]

    def _guarded(self, what: str, now: datetime, work: Any) -> None:
        """Run work; an error is noted and the next one runs, as in the daemon."""
        self.doing = f"{what} at {now:%H:%M}"
        try:
            work()
        except ConsolidatorError as exc:
            self.failures.append(f"{self.doing} failed: {exc}")

    def relief_due(self, k: int) -> bool:
        """Whether the daemon's relief watch runs at sample k ([relief] interval)."""
        interval = relief_settings(self.ctx.config).interval
        if interval <= 0 or k == 0:
            return False
        return k % max(int(round(interval / self.trace.step_s)), 1) == 0

    def relieve(self, k: int) -> ReliefRun:
        """The daemon's relief (app/relief.py relieve_now), reading usage from the trace over
        the [relief] queries' windows; every host may be powered on (each has a BMC)."""
        reads = self.usage_reads(k)
        self.relieving = True
        try:
            run = relieve_now(self.ctx, self.execute, read=reads.read,
                              powerable=reads.powerable, quiet=True)
        finally:
            self.relieving = False
        self.reliefs += bool(run.plan_id)
        return run

    def watch_due(self, k: int) -> bool:
        """Whether the daemon's capacity watch runs at sample k."""
        interval = self.settings.capacity_watch_interval
        if interval <= 0 or k == 0:
            return False
        return k % max(int(round(interval / self.trace.step_s)), 1) == 0

    def cycle(self, k: int, now: datetime) -> None:
        """The daemon's cycle (app/cycle.py run_cycle) on the replay's cloud."""
        self.cycles += 1
        first = self.last + 1 if self.cycles > 1 else 0
        # at least min_samples where the trace has them: the daemon's windows ([7d]) reach
        # back past the previous cycle, so a frequent schedule is not a short history
        first = min(first, max(k - self.min_samples + 1, 0))
        mean, std = usage_window(self.trace, first, k)
        samples = np.full(len(mean), k - first + 1)
        self.usage = (mean, short_window_std(mean, std, samples, self.min_samples))
        self.last = k
        result = run_cycle(self.ctx, self.settings, self.windows, now, self.ports(k))
        if result.failed:
            self.failures.append(f"{self.doing} failed: {result.failed}")
        self.ramped += result.powered_on

    def watch(self, k: int, now: datetime) -> None:
        """The daemon's capacity watch (app/cycle.py capacity_watch_once)."""
        self.watches += 1
        target = spare_target(self.windows, now, self.settings.spare)
        self.watched += capacity_watch_once(self.ctx, self.ports(k), target, now)

    def ports(self, k: int) -> CloudPorts:
        """The replay's cloud as the daemon's functions read and act on it at sample k."""
        return CloudPorts(read=self.inventory,
                          snapshot=lambda: store_inventory(self.ctx, self.inventory()),
                          execute=self.execute, relieve=lambda: self.relieve(k),
                          usage=self.usage_reads(k))

    def inventory(self, usage: tuple[np.ndarray, np.ndarray] | None = None) -> Inventory:
        """The replay's cloud now, with the VMs' usage statistics (default: the cycle's)."""
        from consolidator.openstack.inventory import Inventory

        mean, std = usage or self.usage
        cluster = cluster_at(self.hosts, self.instances, self.placement, self.state, mean, std)
        return Inventory(cluster, "replay", "2.88", cloud="replay")

    def usage_reads(self, k: int) -> UsageReads:
        """Usage as the capacity watch reads it at sample k: each VM's mean and deviation
        over the [relief] queries' windows, and the trend of the total over trend_window
        (only with a trend_query, as in the daemon)."""
        step_s = self.trace.step_s

        def read(settings: ReliefSettings) -> Inventory:
            means = window_steps(settings.mean_query, step_s, 600)
            stds = window_steps(settings.std_query, step_s, 3600)
            mean, _ = usage_window(self.trace, k - means + 1, k)
            _, std = usage_window(self.trace, k - stds + 1, k)
            return self.inventory((mean, std))

        def rise(settings: ReliefSettings) -> float:
            if not settings.trend_query or settings.lookahead <= 0:
                return 0.0
            lo = max(k - max(int(round(settings.trend_window / step_s)), 2) + 1, 0)
            running = (self.placement >= 0)[:, None]
            total = (self.trace.utilisation[:, lo:k + 1] * running
                     * (self.trace.mips / CPU_UNIT_MIPS)[:, None]).sum(axis=0)
            if len(total) < 2:
                return 0.0
            return predicted_rise(list(np.arange(lo, k + 1) * step_s), list(total),
                                  settings.lookahead)

        return UsageReads(read=read, rise=rise, powerable=list)

    def execute(self, plan_id: str, resume: bool = False) -> Outcome:
        """Run an approved plan with the real executor against the replay's simulated cloud
        seeded with its state now; keep where every VM went and each host's power and
        service."""
        from consolidator.execution.replay_cloud import migrations_run, replay_cloud, settled
        from consolidator.store.journal import last_id, restamp

        cluster = self.inventory().cluster
        nova, lookup, drivers = replay_cloud(cluster)
        before = last_id(self.ctx.engine())
        outcome = PlanRun(self.ctx, plan_id, cloud=(nova, lookup)).run(resume=resume)
        # the journal on the replay's clock: the cool-down reads its power actions by time
        restamp(self.ctx.engine(), after_id=before, at=self.now)
        if not outcome.ok:
            self.failures.append(f"{self.doing}: plan {plan_id} did not finish "
                                 f"({len(outcome.failed)} failed, {len(outcome.skipped)} "
                                 f"skipped, {len(outcome.left_on)} left on)")
        moved, hosts = settled(nova, drivers, cluster)
        ran = [(self.vm_row[server], self.row[host])
               for server, host in migrations_run(nova, cluster)]
        self.made += ran
        if self.relieving:
            self.by_relief += len(ran)
        else:
            self.by_cycles += len(ran)
        for server, where in moved.items():
            self.placement[self.vm_row[server]] = self.row[where]
        for name, settled_host in hosts.items():
            self.state[self.row[name]] = settled_host
        return outcome



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


def make_policy(name: str, ctx: AppContext | None = None, start: datetime = START,
                cloudsim_workload: bool = True) -> Policy:
    """A policy by name: npa, consolidator (needs ctx), thr-mmt-X or lr-mmt-X; with
    cloudsim_workload, its VMs end as in CloudSim (core/replay/trace.py end_steps)."""
    if name == "npa":
        return NoPowerManagement()
    if name == "consolidator":
        if ctx is None:
            raise UsageError("the consolidator policy needs a context (its config)")
        return ConsolidatorPolicy(ctx, start, cloudsim_workload=cloudsim_workload)
    return replace(reference_policy(name), cloudsim_workload=cloudsim_workload)


def run_policy(trace: Trace, dc: DataCentre, name: str, ctx: AppContext | None = None,
               start: datetime = START, cloudsim_workload: bool = True) -> ReplayResult:
    """One policy over a trace on a data centre: its metrics. The consolidator policy uses
    ctx's config and a throw-away database of its own. cloudsim_workload: VMs end as in
    CloudSim 3.0.3 (every policy but npa, which draws full power whatever runs)."""
    if name != "consolidator":
        return replay(trace, dc, make_policy(name, cloudsim_workload=cloudsim_workload))
    if ctx is None:
        raise UsageError("the consolidator policy needs a context (its config)")
    rctx, scratch = replay_context(ctx)
    try:
        return replay(trace, dc, make_policy(name, rctx, start, cloudsim_workload))
    finally:
        rctx.engine(migrated=False).dispose()
        scratch.cleanup()


def run_replay(ctx: AppContext, trace: Trace, dc: DataCentre, policies: tuple[str, ...],
               start: datetime = START, cloudsim_workload: bool = True) -> dict[str, Any]:
    """Several policies over one trace, all on the same workload (cloudsim_workload: VMs
    end as in CloudSim): the floor of that workload, the sizes, each policy's result."""
    for name in policies:     # fail before any long run
        if name not in ("npa", "consolidator"):
            try:
                reference_policy(name)
            except ModelError as exc:
                raise UsageError(str(exc)) from None
    results = []
    for name in policies:
        ctx.report(f"replaying {name} ...")
        results.append(run_policy(trace, dc, name, ctx, start, cloudsim_workload))
    ends = end_steps(trace) if cloudsim_workload else None
    floor = floor_steps(trace, dc.best_joules_per_mip, ends)
    placeable = allocation_floor_steps(trace, dc, ends)
    return {"floor_kwh": round(float(floor.sum()), 3), "floor_steps": floor.tolist(),
            "allocation_floor_kwh": round(float(placeable.sum()), 3),
            "allocation_floor_steps": placeable.tolist(),
            "hosts": dc.hosts, "vms": trace.vms, "steps": trace.steps, "step_s": trace.step_s,
            "cpu_allocation_ratio": dc.cpu_allocation_ratio, "results": results}


def sample_folder() -> str:
    """The shipped sample: 50 VMs of PlanetLab's 2011-03-03."""
    from importlib.resources import files

    return str(files("consolidator") / "data" / "planetlab-sample" / "20110303-50")


def replay_trace(ctx: AppContext, *, planetlab: str | None = None,
                 trace_file: str | None = None, hosts_file: str | None = None,
                 hosts: int = 800, vms: int | None = None,
                 policies: tuple[str, ...] | None = None,
                 history: HistoryRange | None = None,
                 workload: str | None = None,
                 cpu_allocation_ratio: float | None = None) -> dict[str, Any]:
    """'consolidator simulate trace': load the trace (a PlanetLab folder or bundled day, a
    trace file or an operator's Prometheus history) and the data centre (its Placement CPU
    allocation ratio overridden by cpu_allocation_ratio), replay the policies (default:
    all) on the workload ("cloudsim": VMs end as in CloudSim, the default for PlanetLab
    days; "full": every VM runs to the end, the default for trace files and history,
    where an idle VM is still there)."""
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
    if cpu_allocation_ratio is not None:
        dc = replace(dc, cpu_allocation_ratio=cpu_allocation_ratio)
    planetlab_trace = history is None and not trace_file
    cloudsim = (workload or ("cloudsim" if planetlab_trace else "full")) == "cloudsim"
    return run_replay(ctx, trace, dc, tuple(policies or POLICIES), start, cloudsim)


def replay_days(ctx: AppContext, days: list[str], **options: Any) -> list[dict[str, Any]]:
    """Several PlanetLab days (bundled names or folders), each replayed as replay_trace does
    with the same options; one document per day, with its "day"."""
    from consolidator.scenario.traces import load_planetlab

    for day in days:      # fail before any long run
        load_planetlab(day, vms=1)
    out = []
    for day in days:
        ctx.report(f"day {day}:")
        out.append({"day": Path(day).name, **replay_trace(ctx, planetlab=day, **options)})
    return out


def bundled_days() -> list[str]:
    """The PlanetLab days the package bundles, by name (for --days all)."""
    from consolidator.scenario.traces import bundled_days as days

    return days()
