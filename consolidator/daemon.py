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

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from consolidator.app.apply import PlanRun
from consolidator.app.context import AppContext
from consolidator.app.cycle import (
    CloudPorts,
    CycleResult,
    capacity_watch_once,
    host_counts,
    hosts_to_power_on,
    is_up,
    ramp,
    ramp_candidates,
    run_cycle,
)
from consolidator.app.leadership import (
    DaemonLeaseNames,
    Leadership,
    executor_cloud,
    executor_holder,
)
from consolidator.app.liveness import Liveness, notify_service, watchdog_period
from consolidator.app.metrics import count_lost_lease, last_known_hosts, record_cycle_end
from consolidator.app.power_readings import watts_off
from consolidator.app.relief import ReliefRun, relieve_now
from consolidator.app.review import plan_counts
from consolidator.app.settings import cron_trigger, daemon_settings, relief_settings
from consolidator.app.snapshots import last_readings, read_cloud, record_snapshot
from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Cluster
from consolidator.core.padding import parse_windows, spare_target
from consolidator.core.wording import plural

if TYPE_CHECKING:
    from consolidator.app.apply import Outcome

#: What tests and callers import from here (they live in app/cycle.py).
__all__ = ["CycleResult", "Daemon", "host_counts", "hosts_to_power_on", "ramp_candidates"]

LOG = logging.getLogger(__name__)
T = TypeVar("T")


class _Cancelled(Exception):
    """The daemon lost its lease during a cycle."""


@dataclass(frozen=True)
class _Turn(Generic[T]):
    """How one turn of the daemon's work went: its value, else why it did not run or end."""

    value: T | None = None
    skipped: str = ""
    cancelled: str = ""
    failed: str = ""


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
        names = DaemonLeaseNames(ctx, self.cloud_name)
        self.leadership = Leadership(ctx, names, self.settings.lease_ttl, label=names.label)
        self.holder, self.lease = self.leadership.holder, self.leadership.name
        self.stop = threading.Event()
        self.busy = threading.Lock()
        self._lease_lock = threading.Lock()    # a renewal and the release, one at a time
        self._resigned = False
        self.doing = ""                         # what holds busy: "cycle", "capacity watch"
        self.working = False                    # a cycle or watch got past lead() and works
        self.run: PlanRun | None = None
        self._leased_cloud: str | None = None
        self.cancelled = threading.Event()     # set when the lease is lost during a cycle
        self.cancel_reason = ""
        self.liveness = Liveness(self.settings.hang_timeout)   # the watchdog's pings
        self._active: bool | None = None
        self._hung = ""                        # why the watchdog is no longer pinged
        if metrics is not None:    # what the database holds, until the first cycle
            try:
                metrics.observe_power(last_readings(ctx))
                metrics.set_plans(plan_counts(ctx))
                self._observe_stored(metrics)
            except ConsolidatorError as exc:
                LOG.warning("metrics start empty: %s", exc)

    # -- leadership --------------------------------------------------------------------

    def lead(self) -> bool:
        """Take or renew the daemon lease; True while this daemon is the active one. False
        once it resigned: work the scheduler started before the shutdown must not take the
        lease back."""
        with self._lease_lock:
            return not self._resigned and self.leadership.hold()

    def resign(self) -> None:
        """Give the lease up for good (on shutdown), after any renewal under way."""
        with self._lease_lock:
            self._resigned = True
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

    def _lead_now(self) -> bool:
        """lead(), shown in consolidator_leader."""
        leading = self.lead()
        if self.metrics is not None:
            self.metrics.set_leader(leading)
        return leading

    def _check_cancelled(self) -> None:
        """Raise _Cancelled once the lease is lost; each call is a step of progress."""
        self.liveness.pulse()
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
        started = time.monotonic()
        turn = self._turn("cycle", self._cycle, wait=True)
        if turn.value is None:
            return CycleResult(skipped=turn.skipped or (f"cancelled: {turn.cancelled}"
                                                        if turn.cancelled else ""),
                               failed=turn.failed, duration_s=time.monotonic() - started)
        result = turn.value
        result.duration_s = time.monotonic() - started
        if result.failed:
            LOG.warning("cycle failed after %.1f s: plan %s: %s", result.duration_s,
                        result.plan_id, result.failed)
        else:
            LOG.info("cycle done in %.1f s: plan %s, %s planned, spare target %d",
                     result.duration_s, result.plan_id,
                     plural(result.migrations_planned, "migration"), result.spare_target)
        self._record_cycle_end()
        if self.metrics is not None:
            self._observe(result)
        return result

    def _turn(self, what: str, work: Callable[[], T], *, wait: bool) -> _Turn[T]:
        """The one skeleton of the daemon's work (the cycle, the capacity watch, the relief
        watch): take the busy lock (wait: for the running work, logged; else skip at once),
        lead (the daemon lease), stand back while an apply or a rollback holds the executor
        lease, then work; a lost lease cancels it, an error fails it in one line."""
        if wait:
            if not self._take_turn(what):
                return _Turn(skipped=_skip(what, "the daemon is stopping", loud=True))
        elif not self.busy.acquire(blocking=False):
            LOG.debug("%s skipped: the %s is running", what, self.doing or "cycle")
            return _Turn(skipped=f"the {self.doing or 'cycle'} is running")
        self.doing = what
        started = time.monotonic()
        self.liveness.working(what)
        try:
            self.cancelled.clear()
            if not self._lead_now():
                return _Turn(skipped=_skip(what, "another daemon holds the lease", loud=wait))
            self.working = True
            holder = executor_holder(self.ctx, self._executor_cloud())
            if holder is not None:
                return _Turn(skipped=_skip(
                    what, f"an apply or a rollback is running ({holder} holds the executor "
                          f"lease)" + ("; planning now would start from a half-migrated "
                                       "cloud" if what == "cycle" else ""), loud=True))
            return _Turn(value=work())
        except _Cancelled as exc:
            LOG.warning("%s cancelled after %.1f s: %s", what, time.monotonic() - started, exc)
            return _Turn(cancelled=str(exc))
        except ConsolidatorError as exc:
            LOG.log(logging.ERROR if what == "cycle" else logging.WARNING,
                    "%s failed after %.1f s: %s", what, time.monotonic() - started, exc)
            return _Turn(failed=str(exc))
        finally:
            self.working = False
            self.liveness.idle()
            self.busy.release()

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
        return run_cycle(self.ctx, self.settings, self.windows, self.clock(), self.ports)

    @property
    def ports(self) -> CloudPorts:
        """The live cloud, as the shared cycle (app/cycle.py) reads and acts on it."""
        observe = self.metrics.observe_power if self.metrics is not None else None
        return CloudPorts(
            read=lambda: read_cloud(self.ctx), snapshot=lambda: record_snapshot(self.ctx)[0],
            execute=self._execute, check=self._check_cancelled, stopping=self.stop.is_set,
            relieve=lambda: relieve_now(self.ctx, self._execute,
                                        auto_apply=self.settings.auto_apply),
            observe_power=observe)

    def _execute(self, plan_id: str, resume: bool = False) -> Outcome:
        """Run a plan; _Cancelled once it ends if the lease was lost meanwhile."""
        self.run = PlanRun(self.ctx, plan_id, progress=lambda _look: self.liveness.pulse())
        if self.stop.is_set() or self.cancelled.is_set():
            self.run.stop()
        try:
            outcome = self.run.run(resume=resume)
        finally:
            self.run = None
        self._check_cancelled()
        return outcome

    # -- power-on: the morning ramp and the capacity watch -----------------------------

    def capacity_watch(self) -> list[str]:
        """Power hosts on when the powered hosts' free capacity falls below the padding, or
        their usage at confidence with its trend nears their cores (app/usage_power.py);
        skipped while a cycle or an apply runs (a cycle ramps too), one line on an error."""
        turn = self._turn("capacity watch", lambda: capacity_watch_once(
            self.ctx, self.ports, self.target(), self.clock()), wait=False)
        return turn.value or []

    def relief_watch(self) -> ReliefRun | None:
        """Relieve the hosts usage overloads now ([relief] interval); None when skipped."""
        return self._turn("relief watch", lambda: relieve_now(
            self.ctx, self._execute, auto_apply=self.settings.auto_apply), wait=False).value

    def jobs_watch(self) -> list[str]:
        """Carry out the jobs the API recorded for this cloud, oldest first, while this
        daemon leads (app/jobs.py); skipped while a cycle or an apply runs. The ids run."""
        from consolidator.app.jobs import run_next_job
        from consolidator.app.settings import api_settings

        timeout = api_settings(self.ctx.config).job_timeout

        def run_all() -> list[str]:
            done: list[str] = []
            while not self.stop.is_set() and not self.cancelled.is_set():
                job = run_next_job(self.ctx, cloud=self._executor_cloud(),
                                   holder=self.holder, timeout=timeout,
                                   execute=self._execute)
                if job is None:
                    break
                done.append(job.id)
                self.liveness.pulse()
            return done
        return self._turn("jobs", run_all, wait=False).value or []

    def _ramp(self, target: int, *, spares_only: bool) -> tuple[list[str], Cluster]:
        """The shared ramp (app/cycle.py) on the live cloud."""
        return ramp(self.ctx, self.ports, target, spares_only=spares_only)

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
                                                     if not is_up(h)]))

    def _observe(self, result: CycleResult) -> None:
        outcome = result.outcome
        hosts = result.hosts
        self.metrics.observe_cycle(
            duration_s=result.duration_s, hosts_active=hosts.get("active", 0),
            hosts_spare=hosts.get("spare", 0), hosts_off=hosts.get("powered_off", 0),
            watts_saved=result.watts_saved,
            migrations_ok=len(outcome.migrated) if outcome else 0,
            migrations_failed=len(outcome.failed) if outcome else 0,
            off_holding_work=hosts.get("off_holding_work", 0))
        self.metrics.set_plans(plan_counts(self.ctx))

    def _record_cycle_end(self) -> None:
        """The cycle's end, kept in the database (both daemons of a pair export it)."""
        try:
            record_cycle_end(self.ctx, time.time())
        except ConsolidatorError as exc:
            LOG.warning("could not record the cycle's end for the metrics: %s", exc)

    # -- the service -------------------------------------------------------------------

    def serve(self) -> None:
        """Run the schedule until SIGTERM/SIGINT; only the lease holder does any work."""
        import signal

        from apscheduler.events import EVENT_SCHEDULER_STARTED
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
        if self.settings.job_interval > 0:
            # a second instance finds the busy lock taken and returns at once (no warning
            # from the scheduler each interval while a long job runs)
            scheduler.add_job(self.jobs_watch, "interval", id="jobs", max_instances=2,
                              seconds=self.settings.job_interval, coalesce=True)
        scheduler.add_job(self.heartbeat, "interval", id="lease",
                          seconds=max(self.settings.lease_ttl / 3, 0.5),
                          max_instances=1, coalesce=True, next_run_time=datetime.now(
                              trigger.timezone))

        period = watchdog_period()
        if period is not None:     # twice per period, as sd_watchdog_enabled(3) advises
            scheduler.add_job(self.watchdog, "interval", id="watchdog", seconds=period / 2,
                              max_instances=1, coalesce=True)

        def shutdown(signum: int, _frame: object) -> None:
            LOG.info("%s: starting nothing new; finishing the running actions",
                     signal.Signals(signum).name)
            notify_service("STOPPING=1", "STATUS=finishing the running actions")
            self.stop.set()
            if self.run is not None:
                self.run.stop()
            shut_down_scheduler(scheduler)

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, shutdown)
        LOG.info("daemon %s started: schedule %r, lease %s", self.holder,
                 self.settings.schedule, self.lease)
        scheduler.add_listener(lambda _event: notify_service(
            "READY=1", f"STATUS=schedule {self.settings.schedule}, lease {self.lease}"),
            EVENT_SCHEDULER_STARTED)
        try:
            scheduler.start()
        finally:
            with self.busy:  # wait for a running cycle to finish or journal its actions
                pass
            self.resign()
            LOG.info("daemon %s stopped", self.holder)

    def heartbeat(self) -> None:
        """Renew or take the lease, and log when this daemon becomes active or standby; a
        daemon that is not (or cannot tell that it is) the lease holder cancels its cycle.
        An active daemon that loses the lease adds to leases_lost_total{lease="daemon"}."""
        was = self._active
        try:
            now, why = self.lead(), "another daemon holds the lease"
        except ConsolidatorError as exc:
            now, why = False, f"renewing it failed: {exc}"
        if self._resigned:      # stopping: the lease was given up, not lost
            return
        if not now:
            self.cancel(f"lost the daemon lease ({why})")
        self._active = now
        if self.metrics is not None:
            self.metrics.set_leader(now)
        if now != was:
            LOG.info("daemon %s is now %s", self.holder,
                     "the active daemon" if now else "standby (another holds the lease)")
        if was and not now:
            _count_lost_lease_or_warn(self.ctx, "daemon")

    def watchdog(self) -> bool:
        """Ping systemd's watchdog (WATCHDOG=1) unless the running work is hung: run by the
        scheduler, so that a stuck scheduler stops the pings too. True if it pinged."""
        hung = self.liveness.stalled()
        if hung is not None:
            if not self._hung:
                LOG.error("%s: no longer pinging the systemd watchdog; systemd restarts the "
                          "daemon when WatchdogSec= passes", hung)
            self._hung = hung
            return False
        self._hung = ""
        return notify_service("WATCHDOG=1")


def shut_down_scheduler(scheduler: Any) -> threading.Thread:
    """Shut the scheduler down from a thread of its own, and return that thread.

    A signal handler runs in the main thread, which is also the BlockingScheduler's: a
    signal that lands while the scheduler processes its due jobs re-enters its re-entrant
    job-store lock, and a shutdown made there empties the job store under the loop, which
    then fails to update the job it ran (JobLookupError, found under load). From another
    thread, the shutdown waits for that processing to end. A second signal is harmless."""
    from apscheduler.schedulers import SchedulerNotRunningError

    def shut_down() -> None:
        with contextlib.suppress(SchedulerNotRunningError):
            scheduler.shutdown(wait=False)

    thread = threading.Thread(target=shut_down, name="scheduler-shutdown", daemon=True)
    thread.start()
    return thread


def _skip(what: str, why: str, *, loud: bool) -> str:
    """Log why a turn of work is skipped (info when loud, else debug); the reason."""
    LOG.log(logging.INFO if loud else logging.DEBUG, "%s skipped: %s", what, why)
    return why


def _count_lost_lease_or_warn(ctx: AppContext, lease: str) -> None:
    """leases_lost_total{lease}, or a warning if the database cannot count it."""
    try:
        count_lost_lease(ctx, lease)
    except ConsolidatorError as exc:
        LOG.warning("could not count the lost lease: %s", exc)


def _log_line(line: str) -> None:
    LOG.info("%s", line.strip())
