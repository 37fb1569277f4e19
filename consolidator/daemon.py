"""The daemon: an hourly cycle and a capacity watch, run by the one daemon holding the lease.

A cycle resumes any plan a crash left running, snapshots the cloud, computes the spare-host
target from the padding schedule, plans (superseding older proposed plans), applies the plan
if auto_apply is on, then powers on the most capable hosts consolidator powered off when fewer
spare hosts are up than the target (the morning ramp). The capacity watch powers hosts on
between cycles when the free capacity of the powered hosts falls below the padding. An empty
host beyond the target is powered off only through a plan.

A daemon that loses its lease (the heartbeat finds another holder, or cannot renew it) cancels
its running cycle: the running plan starts nothing new, and the cycle ends cancelled.

A plan a crash left running is resumed only with auto_apply on and when nothing has overtaken
it since (app/interrupted.py); otherwise it becomes interrupted, logged. No cycle is lost
without a log line: a cycle that finds the capacity watch running waits for it, a skipped or
failed cycle says why in one line, and 'daemon --once' gives the lease back however it ends.
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
from consolidator.app.interrupted import mark_interrupted, triage_running
from consolidator.app.leadership import (
    Leadership,
    LeaseHeldError,
    executor_cloud,
    executor_holder,
    refuse_while_executor_runs,
)
from consolidator.app.metrics import last_known_hosts
from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.power_readings import watts_off
from consolidator.app.relief import ReliefRun, relieve_now
from consolidator.app.review import approve, cancel, plan_counts, power_on_plan
from consolidator.app.rollback import bmc_power
from consolidator.app.settings import cron_trigger, daemon_settings, relief_settings
from consolidator.app.snapshots import last_readings, read_cloud, record_snapshot
from consolidator.app.usage_power import cool_down, usage_power_on
from consolidator.core.errors import ConsolidatorError
from consolidator.core.maintenance import drained_by
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
    #: Why the cycle failed (an error, or its apply refused), in one line; "" if it did not.
    failed: str = ""
    hosts: dict[str, int] = field(default_factory=dict)   # active, spare, powered_off
    watts_saved: float = 0.0    # the powered-off hosts' idle draw, estimated as plans do
    relief: ReliefRun | None = None     # the relief at the end of the cycle


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
        self.doing = ""                         # what holds busy: "cycle", "capacity watch"
        self.working = False                    # a cycle or watch got past lead() and works
        self.run: PlanRun | None = None
        self._leased_cloud: str | None = None
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
        """Cancel the running cycle, if any: its plan run starts nothing new. Warned once,
        and only for work this daemon started as the leader (a standby has none)."""
        first = not self.cancelled.is_set()
        if first:
            self.cancel_reason = why
        self.cancelled.set()
        run = self.run
        if run is not None:
            run.stop()
        if first and self.working:
            LOG.warning("%s: cancelling the running %s", why, self.doing or "cycle")
        else:
            LOG.debug("%s", why)

    def _check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise _Cancelled(self.cancel_reason)

    # -- the cycle ---------------------------------------------------------------------

    def target(self) -> int:
        """The spare hosts wanted now."""
        return spare_target(self.windows, self.clock(), self.settings.spare)

    def once(self) -> CycleResult:
        """One cycle now ('daemon --once'); the lease is given back however it ends."""
        try:
            return self.cycle()
        finally:
            try:
                self.resign()
            except ConsolidatorError as exc:     # it expires on its own
                LOG.warning("could not release the daemon lease: %s", exc)

    def cycle(self) -> CycleResult:
        """One cycle; it waits for a running capacity watch; skipped (saying why) when
        another daemon leads or an apply runs, cancelled when the lease is lost during it,
        failed in one line on an error."""
        if not self._take_turn("cycle"):
            return _skipped("the daemon is stopping")
        started = time.monotonic()
        try:
            self.cancelled.clear()
            if not self.lead():
                return _skipped("another daemon holds the lease")
            self.working = True
            holder = executor_holder(self.ctx, self._executor_cloud())
            if holder is not None:
                return _skipped(f"an apply or a rollback is running ({holder} holds the "
                                f"executor lease); planning now would start from a "
                                f"half-migrated cloud")
            result = self._cycle()
        except _Cancelled as exc:
            result = CycleResult(skipped=f"cancelled: {exc}",
                                 duration_s=time.monotonic() - started)
            LOG.warning("cycle cancelled after %.1f s: %s", result.duration_s, exc)
            return result
        except ConsolidatorError as exc:
            result = CycleResult(failed=str(exc), duration_s=time.monotonic() - started)
            LOG.error("cycle failed after %.1f s: %s", result.duration_s, exc)
            return result
        finally:
            self.working = False
            self.busy.release()
        result.duration_s = time.monotonic() - started
        if result.failed:
            LOG.warning("cycle failed after %.1f s: plan %s: %s", result.duration_s,
                        result.plan_id, result.failed)
        else:
            LOG.info("cycle done in %.1f s: plan %s, %s planned, spare target %d",
                     result.duration_s, result.plan_id,
                     plural(result.migrations_planned, "migration"), result.spare_target)
        if self.metrics is not None:
            self._observe(result)
        return result

    def _executor_cloud(self) -> str:
        """The name of the cloud's executor lease (read once)."""
        if self._leased_cloud is None:
            self._leased_cloud = executor_cloud(self.ctx)
        return self._leased_cloud

    def _take_turn(self, what: str) -> bool:
        """Take the busy lock for a cycle, waiting (logged) while a capacity watch or another
        cycle holds it; False if the daemon stops meanwhile."""
        if not self.busy.acquire(blocking=False):
            LOG.info("%s waits for the running %s to finish", what, self.doing or "work")
            while not self.busy.acquire(timeout=0.5):
                if self.stop.is_set():
                    return False
        self.doing = what
        return True

    def _cycle(self) -> CycleResult:
        self._resume_interrupted()
        self._check_cancelled()
        result = CycleResult(spare_target=self.target())
        snap, _ = record_snapshot(self.ctx)
        result.snapshot_id = snap.info.id
        if self.metrics is not None:
            self.metrics.observe_power({r.host: r.watts for r in snap.readings})
        self._check_cancelled()
        plan = make_plan(self.ctx, snap, PlanRequest(spare=result.spare_target,
                                                     cool_down=cool_down(self.ctx, self.clock())))
        draft = plan.draft
        result.plan_id, result.migrations_planned = plan.id, len(draft.migrations)
        self._check_cancelled()
        if draft.migrations or draft.power_off:
            if self.settings.auto_apply:
                refuse_while_executor_runs(self.ctx, plan.cloud)
                approve(self.ctx, plan.id, reason="auto_apply")
                try:
                    result.outcome = self._execute(plan.id)
                except LeaseHeldError as exc:     # an apply took the lease meanwhile
                    cancel(self.ctx, plan.id, reason=f"refused: {exc}")
                    result.failed = str(exc)
                    return result
            else:
                LOG.info("plan %s proposed (%s, %s to power off): review it with "
                         "'consolidator plan show %s' and approve it with 'consolidator plan "
                         "approve %s'", plan.id, plural(len(draft.migrations), "migration"),
                         plural(len(draft.power_off), "host"), plan.id, plan.id)
        self._check_cancelled()
        result.relief = relieve_now(self.ctx, self._execute,
                                    auto_apply=self.settings.auto_apply)
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
        """Before anything else, finish the plans a crash left running that nothing has
        overtaken, with auto_apply on; mark the others interrupted, saying why."""
        for plan_id, why_not in triage_running(self.ctx, self.cloud_name,
                                               auto_apply=self.settings.auto_apply):
            if why_not is not None:
                LOG.warning("plan %s was left running and is not resumed: %s", plan_id,
                            mark_interrupted(self.ctx, plan_id, why_not))
                continue
            LOG.info("resuming plan %s, which was left running", plan_id)
            self._execute(plan_id, resume=True)

    # -- power-on: the morning ramp and the capacity watch -----------------------------

    def capacity_watch(self) -> list[str]:
        """Power hosts on when the powered hosts' free capacity falls below the padding, or
        their usage at confidence with its trend nears their cores (app/usage_power.py);
        skipped while a cycle or an apply runs (a cycle ramps too), one line on an error."""
        if not self.busy.acquire(blocking=False):
            LOG.debug("capacity watch skipped: the %s is running", self.doing or "cycle")
            return []
        self.doing = "capacity watch"
        try:
            self.cancelled.clear()
            if not self.lead():
                return []
            self.working = True
            holder = executor_holder(self.ctx, self._executor_cloud())
            if holder is not None:
                LOG.info("capacity watch skipped: an apply or a rollback is running (%s "
                         "holds the executor lease)", holder)
                return []
            return self._ramp(self.target(), spares_only=False)[0] or \
                usage_power_on(self.ctx, self._execute, now=self.clock())
        except _Cancelled as exc:
            LOG.warning("capacity watch cancelled: %s", exc)
            return []
        except ConsolidatorError as exc:
            LOG.warning("capacity watch failed: %s", exc)
            return []
        finally:
            self.working = False
            self.busy.release()

    def relief_watch(self) -> ReliefRun | None:
        """Relieve the hosts usage overloads now ([relief] interval); None when skipped."""
        if not self.busy.acquire(blocking=False):
            LOG.debug("relief watch skipped: the %s is running", self.doing or "cycle")
            return None
        self.doing = "relief watch"
        try:
            self.cancelled.clear()
            if not self.lead():
                return None
            self.working = True
            holder = executor_holder(self.ctx, self._executor_cloud())
            if holder is not None:
                LOG.info("relief watch skipped: an apply or a rollback is running (%s holds "
                         "the executor lease)", holder)
                return None
            return relieve_now(self.ctx, self._execute, auto_apply=self.settings.auto_apply)
        except _Cancelled as exc:
            LOG.warning("relief watch cancelled: %s", exc)
            return None
        except ConsolidatorError as exc:
            LOG.warning("relief watch failed: %s", exc)
            return None
        finally:
            self.working = False
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
        if relief_settings(self.ctx.config).interval > 0:
            scheduler.add_job(self.relief_watch, "interval", id="relief", max_instances=1,
                              seconds=relief_settings(self.ctx.config).interval, coalesce=True)
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


def _skipped(why: str) -> CycleResult:
    """A skipped cycle, logged with its reason."""
    LOG.info("cycle skipped: %s", why)
    return CycleResult(skipped=why)


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
    capable first; never a drained host (it is in maintenance until 'hosts undrain')."""
    rows = [h for h, host in enumerate(cluster.hosts)
            if (host.state == "down" or host.power == "off")
            and (host.disabled_reason or "").startswith(OUR_REASON)
            and drained_by(host.disabled_reason) is None]
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
