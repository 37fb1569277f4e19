"""The daemon: an hourly cycle and a capacity watch, run by the one daemon holding the lease.

A cycle resumes any plan a crash left running, snapshots the cloud, computes the spare-host
target from the padding schedule, plans (superseding older proposed plans), applies the plan
if auto_apply is on, then powers on the most capable hosts consolidator powered off when fewer
spare hosts are up than the target (the morning ramp). The capacity watch powers hosts on
between cycles when the free capacity of the powered hosts falls below the padding. An empty
host beyond the target is powered off only through a plan.

A daemon that loses its lease (the heartbeat finds another holder, or cannot renew it) cancels
its running cycle: the running plan starts nothing new, and the cycle ends cancelled.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from consolidator.app.apply import PlanRun
from consolidator.app.context import AppContext
from consolidator.app.database import prune_if_configured
from consolidator.app.leadership import Leadership, executor_holder
from consolidator.app.metrics import last_known_hosts
from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.power_readings import watts_off
from consolidator.app.review import approve, plan_counts, power_on_plan, running_plans
from consolidator.app.rollback import bmc_power
from consolidator.app.settings import cron_trigger, daemon_settings
from consolidator.app.snapshots import last_readings, read_cloud, record_snapshot
from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Cluster, Host
from consolidator.core.padding import parse_windows, spare_target
from consolidator.core.rollback_plan import OUR_REASON
from consolidator.core.wording import plural

if TYPE_CHECKING:
    from consolidator.app.apply import Outcome

LOG = logging.getLogger(__name__)


@dataclass
class CycleResult:
    """What one cycle did."""

    snapshot_id: str = ""
    plan_id: str = ""
    spare_target: int = 0
    migrations_planned: int = 0
    outcome: Outcome | None = None
    powered_on: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    skipped: str = ""
    hosts: dict[str, int] = field(default_factory=dict)   # active, spare, powered_off
    watts_saved: float = 0.0    # the powered-off hosts' idle draw, estimated as plans do


class _Cancelled(Exception):
    """The daemon lost its lease during a cycle."""


class Daemon:
    """One cloud's daemon: cycles, the capacity watch and the leader lease."""

    def __init__(self, ctx: AppContext, *, clock: Callable[[], datetime] | None = None,
                 metrics: Any = None) -> None:
        self.ctx = ctx
        ctx.report = _log_line  # the daemon logs what the CLI would print
        self.settings, self.cloud_name = daemon_settings(ctx.config), ctx.cloud_name
        self.windows = parse_windows(self.settings.padding)
        self.clock = clock or (lambda: datetime.now().astimezone())
        self.metrics = metrics
        self.leadership = Leadership(ctx, f"daemon:{self.cloud_name or 'default'}",
                                     self.settings.lease_ttl)
        self.holder, self.lease = self.leadership.holder, self.leadership.name
        self.stop = threading.Event()
        self.busy = threading.Lock()
        self.run: PlanRun | None = None
        self.cancelled = threading.Event()     # set when the lease is lost during a cycle
        self.cancel_reason = ""
        if metrics is not None:    # what the database holds, until the first cycle
            try:
                metrics.observe_power(last_readings(ctx))
                metrics.set_plans(plan_counts(ctx))
                self._observe_stored(metrics)
            except ConsolidatorError as exc:
                LOG.warning("metrics start empty: %s", exc)

    # -- leadership --------------------------------------------------------------------

    def lead(self) -> bool:
        """Take or renew the daemon lease; True while this daemon is the active one."""
        return self.leadership.hold()

    def resign(self) -> None:
        """Give the lease up (on shutdown)."""
        self.leadership.release()

    def cancel(self, why: str) -> None:
        """Cancel the running cycle, if any: its plan run starts nothing new."""
        self.cancel_reason = why
        self.cancelled.set()
        run = self.run
        if run is not None:
            run.stop()
        if self.busy.locked():
            LOG.warning("%s: cancelling the running cycle", why)

    def _check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise _Cancelled(self.cancel_reason)

    # -- the cycle ---------------------------------------------------------------------

    def target(self) -> int:
        """The spare hosts wanted now."""
        return spare_target(self.windows, self.clock(), self.settings.spare)

    def cycle(self) -> CycleResult:
        """One cycle; skipped when another daemon leads or a cycle already runs, cancelled
        when the lease is lost during it."""
        if not self.busy.acquire(blocking=False):
            return CycleResult(skipped="a cycle or a capacity watch is already running")
        started = time.monotonic()
        try:
            self.cancelled.clear()
            if not self.lead():
                return CycleResult(skipped="another daemon holds the lease")
            holder = executor_holder(self.ctx, self.cloud_name)
            if holder is not None:
                LOG.info("cycle skipped: an apply or a rollback is running (%s holds the "
                         "executor lease); planning now would start from a half-migrated "
                         "cloud", holder)
                return CycleResult(skipped=f"an apply or a rollback is running ({holder} "
                                           f"holds the executor lease)")
            result = self._cycle()
        except _Cancelled as exc:
            result = CycleResult(skipped=f"cancelled: {exc}",
                                 duration_s=time.monotonic() - started)
            LOG.warning("cycle cancelled after %.1f s: %s", result.duration_s, exc)
            return result
        finally:
            self.busy.release()
        result.duration_s = time.monotonic() - started
        LOG.info("cycle done in %.1f s: plan %s, %s planned, spare target %d",
                 result.duration_s, result.plan_id,
                 plural(result.migrations_planned, "migration"), result.spare_target)
        if self.metrics is not None:
            self._observe(result)
        return result

    def _cycle(self) -> CycleResult:
        self._resume_interrupted()
        self._check_cancelled()
        result = CycleResult(spare_target=self.target())
        snap, _ = record_snapshot(self.ctx)
        result.snapshot_id = snap.info.id
        if self.metrics is not None:
            self.metrics.observe_power({r.host: r.watts for r in snap.readings})
        self._check_cancelled()
        plan = make_plan(self.ctx, snap, PlanRequest(spare=result.spare_target))
        draft = plan.draft
        result.plan_id, result.migrations_planned = plan.id, len(draft.migrations)
        self._check_cancelled()
        if draft.migrations or draft.power_off:
            if self.settings.auto_apply:
                approve(self.ctx, plan.id, reason="auto_apply")
                result.outcome = self._execute(plan.id)
            else:
                LOG.info("plan %s proposed (%s, %s to power off): review it with "
                         "'consolidator plan show %s' and approve it with 'consolidator plan "
                         "approve %s'", plan.id, plural(len(draft.migrations), "migration"),
                         plural(len(draft.power_off), "host"), plan.id, plan.id)
        self._check_cancelled()
        result.powered_on, live = self._ramp(result.spare_target, spares_only=True)
        if result.powered_on:  # the read before the ramp no longer holds
            live = read_cloud(self.ctx).cluster
        result.hosts = host_counts(live)
        result.watts_saved = watts_off(self.ctx, snap, [h.name for h in live.hosts
                                                        if not _is_up(h)])
        pruned = prune_if_configured(self.ctx)    # [database] keep_days
        if pruned is not None:
            LOG.info("pruned %s, %s and %s", plural(pruned.snapshots, "snapshot"),
                     plural(pruned.plans, "plan"), plural(pruned.journal, "journal row"))
        return result

    def _execute(self, plan_id: str, resume: bool = False) -> Outcome:
        """Run a plan; _Cancelled once it ends if the lease was lost meanwhile."""
        self.run = PlanRun(self.ctx, plan_id)
        if self.stop.is_set() or self.cancelled.is_set():
            self.run.stop()
        try:
            outcome = self.run.run(resume=resume)
        finally:
            self.run = None
        self._check_cancelled()
        return outcome

    def _resume_interrupted(self) -> None:
        """Finish plans a crash left running, before anything else."""
        for plan_id in running_plans(self.ctx, self.cloud_name):
            LOG.info("resuming plan %s, which was left running", plan_id)
            self._execute(plan_id, resume=True)

    # -- power-on: the morning ramp and the capacity watch -----------------------------

    def capacity_watch(self) -> list[str]:
        """Power hosts on when the powered hosts' free capacity falls below the padding."""
        if not self.busy.acquire(blocking=False):
            return []
        try:
            self.cancelled.clear()
            if not self.lead():
                return []
            return self._ramp(self.target(), spares_only=False)[0]
        except _Cancelled as exc:
            LOG.warning("capacity watch cancelled: %s", exc)
            return []
        finally:
            self.busy.release()

    def _ramp(self, target: int, *, spares_only: bool) -> tuple[list[str], Cluster]:
        """Power on the most capable hosts consolidator powered off, as many as needed;
        return them and the live cluster read before."""
        inventory = read_cloud(self.ctx)
        power = bmc_power(self.ctx, inventory.cluster)   # Nova may still say 'up'
        live = Cluster(hosts=tuple(replace(h, power="off") if power.get(h.name) == "off"
                                   else h for h in inventory.cluster.hosts),
                       instances=inventory.cluster.instances,
                       server_groups=inventory.cluster.server_groups)
        want = hosts_to_power_on(live, target, spares_only=spares_only)
        if not want or self.stop.is_set():
            return [], live
        LOG.info("powering on %s: %s", ", ".join(want),
                 "fewer spare hosts are up than the padding" if spares_only
                 else "the free capacity of the powered hosts is below the padding")
        plan = power_on_plan(self.ctx, inventory, want, target)
        outcome = self._execute(plan.id)
        return outcome.powered_on, live

    def _observe_stored(self, metrics: Any) -> None:
        """The hosts by state and the watts saved, from the newest stored snapshot of the
        cloud and the power actions journaled since: served from the start, not 0 until the
        first cycle."""
        known = last_known_hosts(self.ctx, self.cloud_name)
        if known is None:
            return
        snap, cluster = known
        counts = host_counts(cluster)
        metrics.set_hosts(counts["active"], counts["spare"], counts["powered_off"],
                          watts_off(self.ctx, snap, [h.name for h in cluster.hosts
                                                     if not _is_up(h)]))

    def _observe(self, result: CycleResult) -> None:
        outcome = result.outcome
        hosts = result.hosts
        self.metrics.observe_cycle(
            duration_s=result.duration_s, hosts_active=hosts.get("active", 0),
            hosts_spare=hosts.get("spare", 0), hosts_off=hosts.get("powered_off", 0),
            watts_saved=result.watts_saved,
            migrations_ok=len(outcome.migrated) if outcome else 0,
            migrations_failed=len(outcome.failed) if outcome else 0)
        self.metrics.set_plans(plan_counts(self.ctx))

    # -- the service -------------------------------------------------------------------

    def serve(self) -> None:
        """Run the schedule until SIGTERM/SIGINT; only the lease holder does any work."""
        import signal

        from apscheduler.schedulers.blocking import BlockingScheduler

        trigger = cron_trigger(self.ctx.config)
        scheduler = BlockingScheduler(timezone=trigger.timezone)
        scheduler.add_job(self.cycle, trigger, id="cycle", max_instances=1, coalesce=True,
                          misfire_grace_time=self.settings.misfire_grace_time)
        interval = self.settings.capacity_watch_interval
        if interval > 0:
            scheduler.add_job(self.capacity_watch, "interval", seconds=interval,
                              id="capacity-watch", max_instances=1, coalesce=True)
        scheduler.add_job(self.heartbeat, "interval", id="lease",
                          seconds=max(self.settings.lease_ttl / 3, 0.5),
                          max_instances=1, coalesce=True, next_run_time=datetime.now(
                              trigger.timezone))

        def shutdown(signum: int, _frame: object) -> None:
            LOG.info("%s: starting nothing new; finishing the running actions",
                     signal.Signals(signum).name)
            self.stop.set()
            if self.run is not None:
                self.run.stop()
            scheduler.shutdown(wait=False)

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, shutdown)
        LOG.info("daemon %s started: schedule %r, lease %s", self.holder,
                 self.settings.schedule, self.lease)
        try:
            scheduler.start()
        finally:
            with self.busy:  # wait for a running cycle to finish or journal its actions
                pass
            self.resign()
            LOG.info("daemon %s stopped", self.holder)

    def heartbeat(self) -> None:
        """Renew or take the lease, and log when this daemon becomes active or standby; a
        daemon that is not (or cannot tell that it is) the lease holder cancels its cycle."""
        was = getattr(self, "_active", None)
        try:
            now, why = self.lead(), "another daemon holds the lease"
        except ConsolidatorError as exc:
            now, why = False, f"renewing it failed: {exc}"
        if not now:
            self.cancel(f"lost the daemon lease ({why})")
        self._active = now
        if now != was:
            LOG.info("daemon %s is now %s", self.holder,
                     "the active daemon" if now else "standby (another holds the lease)")


def _log_line(line: str) -> None:
    LOG.info("%s", line.strip())


def host_counts(cluster: Cluster) -> dict[str, int]:
    """Powered hosts with instances (active), powered empty usable ones (spare), and hosts
    down or off (powered_off)."""
    up = np.array([_is_up(h) for h in cluster.hosts], dtype=bool)
    usable = np.array([h.usable for h in cluster.hosts], dtype=bool)
    empty = cluster.population == 0 if len(cluster.hosts) else np.zeros(0, dtype=bool)
    return {"active": int((up & ~empty).sum()), "spare": int((up & usable & empty).sum()),
            "powered_off": int((~up).sum())}


def _is_up(host: Host) -> bool:
    """Up in Nova and not off by its BMC: on."""
    return host.state == "up" and host.power != "off"


def _powered(cluster: Cluster) -> int:
    return sum(_is_up(h) for h in cluster.hosts)


def ramp_candidates(cluster: Cluster) -> list[int]:
    """Hosts consolidator powered off (off by their BMC or down, disabled by us), most
    capable first."""
    rows = [h for h, host in enumerate(cluster.hosts)
            if (host.state == "down" or host.power == "off")
            and (host.disabled_reason or "").startswith(OUR_REASON)]
    scale = np.maximum(cluster.capacity[:, :2].max(axis=0), 1.0) if len(cluster.hosts) else 1.0
    return sorted(rows, key=lambda h: (-float((cluster.capacity[h, :2] / scale).sum()), h))


def hosts_to_power_on(cluster: Cluster, target: int, *, spares_only: bool) -> list[str]:
    """The hosts to power on so that the padding holds.

    spares_only: until `target` usable hosts are up and empty (the cycle's morning ramp).
    Otherwise: until the free vCPU and memory of the usable powered hosts cover `target`
    times the median capacity of those hosts (the capacity watch).
    """
    candidates = ramp_candidates(cluster)
    if not candidates or target <= 0:
        return []
    usable = np.array([h.usable for h in cluster.hosts], dtype=bool)
    if spares_only:
        empty = usable & (cluster.population == 0)
        missing = target - int(empty.sum())
        return [cluster.hosts[h].name for h in candidates[:max(missing, 0)]]
    if not usable.any():
        return [cluster.hosts[h].name for h in candidates[:target]]
    capacity = cluster.capacity[:, :2]
    need = target * np.median(capacity[usable], axis=0)
    free = (capacity[usable] - cluster.usage[usable, :2]).sum(axis=0)
    chosen = []
    for h in candidates:
        if np.all(free >= need):
            break
        chosen.append(cluster.hosts[h].name)
        free = free + capacity[h]
    return chosen
