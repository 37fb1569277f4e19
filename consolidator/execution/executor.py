"""The executor: runs a plan against the live cloud, safely, journaling every action.

Moves run from a queue (consolidator.execution.move_queue, move_runner): a move starts as soon
as the earlier-wave moves touching its source or destination have succeeded and a slot is free
(overall and per destination), after its pre-checks on the live state; a slow move delays only
the moves that depend on it, and a failed one holds them back. A migration is done only when a
fresh GET shows the server ACTIVE on the destination and its migration record is completed. A
host whose migration fails or whose pre-check fails is left alone from then on. Hosts the plan
powers off are checked three times over right before the power call: no server at all on them,
their nova-compute disabled with a reason naming the plan, and the host in the plan. Every
action is a journal row written before the call and updated after it, so that ``apply --resume``
can reconcile a crash against the live state.

The run holds the lease ``executor:<cloud>``. Every journal row written before a destructive
call (migrate, disable, enable, power on, power off) checks the lease generation in the same
transaction, so a process that lost the lease makes no further call; a renewal that fails in
any way counts as losing it.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from consolidator.core.demand import not_low_for_long
from consolidator.core.errors import ConsolidatorError
from consolidator.core.maintenance import drain_reason
from consolidator.core.model import Cluster
from consolidator.core.plan import Move, StoredPlan
from consolidator.core.wording import plural
from consolidator.execution import progress as mp
from consolidator.execution.bmc_preflight import preflight
from consolidator.execution.drain_step import disable_for_drain
from consolidator.execution.host_power import GuardedPower
from consolidator.execution.lease_keeper import LeaseKeeper
from consolidator.execution.move_queue import MoveQueue
from consolidator.execution.move_runner import MoveCallbacks, run_moves
from consolidator.execution.progress import MigrationProgress, ProgressListener, poll_delays
from consolidator.execution.resume import reconcile
from consolidator.execution.run_terms import (  # re-exported: callers import them here
    ExecutorSettings,
    Outcome,
    PowerLookup,
    Reporter,
)
from consolidator.openstack import placement
from consolidator.openstack.nova import FINAL_MIGRATION_STATUSES, Nova
from consolidator.power.driver import POWER_UNKNOWN, read_power
from consolidator.store import journal
from consolidator.store.leases import Guard, LeaseLostError
from consolidator.store.plans import set_status
from consolidator.store.snapshots import demand_samples

if TYPE_CHECKING:
    from consolidator.power.driver import PowerDriver


class Executor:
    """Runs one stored plan against one cloud."""

    def __init__(self, engine: Engine, nova: Nova, cloud: str, cluster: Cluster,
                 settings: ExecutorSettings, power: PowerLookup,
                 report: Reporter = lambda _line: None) -> None:
        self.engine, self.nova, self.cloud = engine, nova, cloud
        self.cluster, self.settings, self.power, self.report = cluster, settings, power, report
        self.hosts = {h.name: h for h in cluster.hosts}
        self.guarded = GuardedPower(engine, nova, cloud, report, settings.power_timeout,
                                    settings.poll_interval)
        self.stop = threading.Event()
        #: Set by a second Ctrl-C: abort the running migrations through Nova now.
        self.abort = threading.Event()
        #: Live migrations in flight (what a Ctrl-C waits for).
        self.running = 0
        self._running_lock = threading.Lock()
        #: Who hears of each running migration's progress (None: nobody; nothing is read).
        self.progress: ProgressListener | None = None
        #: Told once the plan is running (notifications); None: nobody.
        self.on_started: Callable[[], None] | None = None
        self.guard: Guard | None = None
        #: The token this run holds the executor lease under (set when the run takes it).
        self.holder = ""
        self._blocked: dict[str, str] = {}       # source host -> why it is left alone
        self._lock = threading.Lock()

    # -- the run -----------------------------------------------------------------------

    def run(self, plan: StoredPlan, *, resume: bool = False) -> Outcome:
        """Run (or resume) a plan; the plan ends succeeded, failed or stays as it was."""
        keeper = LeaseKeeper(self.engine, self.cloud, self.settings.lease_ttl,
                             on_lost=self._lose, report=self.report)
        self.holder = keeper.holder
        outcome = Outcome()
        with keeper as guard:
            self.guard = self.guarded.guard = guard
            try:
                set_status(self.engine, plan.id, "running",
                           reason="resumed" if resume else "started")
                if self.on_started is not None:
                    self.on_started()
                done = self._reconcile(plan) if resume else set()
                self._power_on(plan, outcome)
                self._disable_drained(plan, outcome)
                self._preflight(plan)
                self._run_waves(plan, done, outcome)
                self._power_off(plan, outcome)
            finally:
                self.stop.set()
        if guard.lost:
            # Another executor may own the plan now: its state is left to that one (or to
            # 'apply --resume').
            outcome.interrupted = True
            outcome.stopped = self._lost_reason()
            self.report(f"stopped: {outcome.stopped}; the plan is left as it is")
            return outcome
        self._finish(plan, outcome)
        return outcome

    def _lose(self, why: str) -> None:
        """Count the lease as lost: stop, and make every later guarded journal write fail."""
        assert self.guard is not None
        first = not self.guard.lost
        self.guard.revoke(why)
        self.stop.set()
        if first:
            self.report(f"{self._lost_reason()}: starting nothing new")

    def _lost_at(self, exc: LeaseLostError) -> str:
        """A guarded journal write found the lease gone: count it lost (with the why that
        LeaseLostError carries after "lost the lease NAME: "); the run's reason."""
        self._lose(str(exc).partition(": ")[2] or str(exc))
        return self._lost_reason()

    def _lost_reason(self) -> str:
        why = self.guard.why if self.guard is not None else ""
        return f"lost the executor lease ({why})" if why else "lost the executor lease"

    def _stopped_reason(self) -> str:
        if self.guard is not None and self.guard.lost:
            return f"not started: {self._lost_reason()}"
        return "interrupted before it started"

    def _begin(self, plan: StoredPlan, action: str, target: str,
               params: dict[str, object]) -> int:
        """The journal row before a destructive call, checking the lease generation in the
        same transaction; LeaseLostError (after stopping the run) if it is not ours."""
        try:
            return journal.begin(self.engine, cloud=self.cloud, plan_id=plan.id, action=action,
                                 target=target, params=params, guard=self.guard)
        except LeaseLostError as exc:
            self._lost_at(exc)
            raise

    def _finish(self, plan: StoredPlan, outcome: Outcome) -> None:
        if outcome.ok:
            set_status(self.engine, plan.id, "succeeded", reason=_summary(outcome))
        else:
            reason = _summary(outcome)
            if outcome.interrupted:
                reason += "; interrupted: resume with 'consolidator apply --resume'"
            set_status(self.engine, plan.id, "failed", reason=reason)

    # -- migrations --------------------------------------------------------------------

    def _run_waves(self, plan: StoredPlan, done: set[str], outcome: Outcome) -> None:
        """Run the moves from a queue that keeps the waves' safety (execution/move_queue.py): a
        move starts once the earlier-wave moves it depends on have succeeded."""
        for move in plan.draft.migrations:
            if move.instance_id in done:
                outcome.migrated.append(move)

        def finished(move: Move, error: str | None) -> None:
            if error is None:
                outcome.migrated.append(move)
            elif error is _NOT_STARTED:
                outcome.interrupted = True
                outcome.skipped[move.instance_name] = self._stopped_reason()
            else:
                outcome.failed[move.instance_name] = error
                self._block(move.source, f"migration of {move.instance_name} failed")

        def skip(move: Move, reason: str) -> None:
            if self.stop.is_set():
                outcome.interrupted = True
                outcome.skipped[move.instance_name] = self._stopped_reason()
            else:
                self._skip(plan, move, reason, outcome)

        run_moves(MoveQueue(plan.draft.migrations, done), MoveCallbacks(
            precheck=lambda moves: self._precheck(plan, moves, outcome),
            migrate=lambda move: self._migrate(plan, move), finished=finished, skip=skip,
            stopping=self.stop.is_set, stopped_reason=self._stopped_reason,
            report=self.report),
            max_parallel=self.settings.max_parallel,
            max_per_destination=self.settings.max_per_destination,
            total=len(plan.draft.migrations), finished=len(outcome.migrated))

    def _block(self, host: str, why: str) -> None:
        with self._lock:
            self._blocked.setdefault(host, why)

    def _precheck(self, plan: StoredPlan, moves: list[Move], outcome: Outcome) -> list[Move]:
        """The moves of a wave whose pre-checks pass on the live state; the others are
        skipped, and so is everything else from their source host.

        Each move's instance and hosts are read live; then, per destination, Placement is
        asked whether it takes the wave's arrivals together (free room of every class, then
        one allocation-candidates request with their traits)."""
        services = self.nova.services()
        power: dict[str, str | None] = {}
        passed: list[Move] = []
        for move in moves:
            reason = self._blocked.get(move.source) or self._check_move(move, services) or \
                self._destination_off(move.destination, power)
            if reason is None:
                passed.append(move)
            else:
                self._skip(plan, move, reason, outcome)
        arriving: dict[str, list[Move]] = defaultdict(list)
        for move in passed:
            arriving[move.destination].append(move)
        refused: dict[str, str] = {}
        for dest, group in arriving.items():
            found = self.nova.refusals(self.hosts[dest].id,
                                       [demand_of(self.cluster, m) for m in group])
            refused.update({m.instance_id: f"destination {dest}: {found[m.instance_id]}"
                            for m in group if m.instance_id in found})
        ready = []
        for move in passed:
            if move.instance_id in refused:
                self._skip(plan, move, refused[move.instance_id], outcome)
            else:
                ready.append(move)
        return ready

    def _destination_off(self, name: str, power: dict[str, str | None]) -> str | None:
        """Why a destination may not receive because its BMC reads off (read once a wave);
        Nova may still report a powered-off compute up."""
        if name not in power:
            driver = self.power(name)
            power[name] = read_power(driver) if driver is not None else None
        if power[name] == "off":
            return f"destination {name}: its BMC reads off"
        return None

    def _skip(self, plan: StoredPlan, move: Move, reason: str, outcome: Outcome) -> None:
        """Skip a move, leave its source host alone from now on, and journal why."""
        outcome.skipped[move.instance_name] = reason
        self._block(move.source, f"pre-check of {move.instance_name} failed: {reason}")
        journal.record(self.engine, cloud=self.cloud, plan_id=plan.id, action="migrate",
                       target=move.instance_id, state=journal.SKIPPED, result=reason,
                       params=_params(move))
        self.report(f"  skip {move.instance_name}: {reason}")

    def _check_move(self, move: Move, services: dict[str, dict]) -> str | None:
        source, dest = self.hosts.get(move.source), self.hosts.get(move.destination)
        if source is None or dest is None:
            return "the plan names a host the snapshot does not know"
        server = self.nova.server(move.instance_id)
        if server is None:
            return "the instance no longer exists"
        if server.compute_host != source.compute_host:
            return f"the instance is on {server.compute_host}, not on {move.source}"
        if server.status != "ACTIVE" or server.task_state:
            return f"the instance is {server.status}/{server.task_state or '-'}, not ACTIVE"
        service = services.get(dest.compute_host) or {}
        if service.get("status") != "enabled" or service.get("state") != "up":
            return (f"destination {move.destination} is "
                    f"{service.get('status', '?')}/{service.get('state', '?')}")
        return None

    def _migrate(self, plan: StoredPlan, move: Move) -> str | None:
        """One live migration, journaled and verified; None on success, else the reason
        (_NOT_STARTED once the run is stopping or the lease is lost)."""
        dest = self.hosts[move.destination]
        if self.stop.is_set():
            return _NOT_STARTED
        try:
            entry = self._begin(plan, "migrate", move.instance_id, _params(move))
        except LeaseLostError:
            return _NOT_STARTED
        self.report(f"  migrate {move.instance_name} {move.source} -> {move.destination}")
        started = time.monotonic()
        self._progress(move, mp.STARTED, started)
        with self._running_lock:
            self.running += 1
        try:
            self.nova.live_migrate(move.instance_id, dest.compute_host)
            error = self._await(move, dest.compute_host, started)
        except ConsolidatorError as exc:
            error = str(exc)
        finally:
            with self._running_lock:
                self.running -= 1
        self._progress(move, mp.FAILED if error else mp.DONE, started)
        journal.finish(self.engine, entry, journal.FAILED if error else journal.SUCCEEDED,
                       error or f"on {move.destination} after {time.monotonic() - started:.1f} s")
        self.report(f"  {'FAILED' if error else 'done'} {move.instance_name}"
                    f"{': ' + error if error else ''} ({time.monotonic() - started:.1f} s)")
        return error

    def _await(self, move: Move, dest_host: str, started: float) -> str | None:
        """Poll until the migration ends (aborting or forcing it at the timeout); verify
        host, status and the migration record, polled until it is final."""
        deadline = started + self.settings.migration_timeout
        handled, interrupted = "", False
        delays = poll_delays(self.settings.poll_first, self.settings.poll_interval)
        while True:
            time.sleep(next(delays))
            server = self.nova.server(move.instance_id)
            if server is None:
                return "the instance disappeared during its migration"
            if server.status != "MIGRATING" and not server.task_state:
                break
            self._progress(move, mp.RUNNING, started, live=True)
            if self.abort.is_set() and not handled:   # a second Ctrl-C
                interrupted = True
                handled = self._on_timeout(move, action="abort", why="interrupted")
                deadline = time.monotonic() + max(self.settings.migration_timeout / 10, 30.0)
            if time.monotonic() > deadline:
                if handled:
                    return (f"timed out after {self.settings.migration_timeout:.0f} s and "
                            f"{handled}, but it did not end: its host is left alone")
                handled = self._on_timeout(move)
                deadline = time.monotonic() + max(self.settings.migration_timeout / 10, 30.0)
        # Real Nova shows the instance ACTIVE on the destination a moment before the source
        # compute marks the record completed: the record is polled until it is final.
        record = self._final_record(move.instance_id, deadline)
        if handled and (interrupted or self.settings.on_timeout == "abort"):
            cause = "interrupted" if interrupted else \
                f"timed out after {self.settings.migration_timeout:.0f} s"
            return (f"{cause}; {handled} "
                    f"(migration {record.get('status', 'unknown')}); the instance is "
                    f"{server.status} on {server.compute_host}")
        if server.compute_host != dest_host or server.status != "ACTIVE":
            return (f"the migration ended with the instance {server.status} on "
                    f"{server.compute_host} (migration {record.get('status', 'unknown')})")
        if record.get("status") != "completed":
            return f"the migration record is {record.get('status', 'missing')}, not completed"
        return None

    def _on_timeout(self, move: Move, action: str | None = None, why: str = "timed out"
                    ) -> str:
        """Abort the overdue (or interrupted) live migration through Nova, or force it to
        complete; journaled. Returns what was done."""
        record = self.nova.latest_migration(move.instance_id) or {}
        action = action or ("abort" if self.settings.on_timeout == "abort"
                            else "force_complete")
        try:
            entry = journal.begin(self.engine, cloud=self.cloud, plan_id=None, action=action,
                                  target=move.instance_id,
                                  params={**_params(move), "migration": record.get("id")},
                                  guard=self.guard)
        except LeaseLostError as exc:
            return f"did not {action.replace('_', '-')} it: {self._lost_at(exc)}"
        try:
            if action == "abort":
                self.nova.abort_migration(move.instance_id, record.get("id"))
            else:
                self.nova.force_complete(move.instance_id, record.get("id"))
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            return f"{action.replace('_', '-')} through Nova failed ({exc})"
        done = "aborted it through Nova" if action == "abort" else \
            "forced it to complete through Nova"
        journal.finish(self.engine, entry, journal.SUCCEEDED, done)
        self.report(f"  {move.instance_name}: {why}; {done}")
        return done

    def _final_record(self, server_id: str, deadline: float) -> dict:
        """The server's newest live-migration record, polled until its status is final (or
        the deadline passes)."""
        deadline = max(deadline, time.monotonic() + self.settings.poll_interval * 20)
        delays = poll_delays(self.settings.poll_first, self.settings.poll_interval)
        while True:
            record = self.nova.latest_migration(server_id) or {}
            if record.get("status") in FINAL_MIGRATION_STATUSES or \
                    time.monotonic() > deadline:
                return record
            time.sleep(next(delays))

    def _progress(self, move: Move, phase: str, started: float, *, live: bool = False
                  ) -> None:
        """Tell the progress listener (if any) about a migration; while it runs, with Nova's
        memory counters where the microversion gives them (2.23+)."""
        if self.progress is None:
            return
        record: dict = {}
        if live:
            try:
                record = self.nova.migration_progress(move.instance_id) or {}
            except ConsolidatorError:
                record = {}
        self.progress(MigrationProgress(
            move.instance_name, move.source, move.destination, phase,
            time.monotonic() - started, record.get("memory_total_bytes"),
            record.get("memory_processed_bytes"), record.get("memory_remaining_bytes")))

    # -- power-on ----------------------------------------------------------------------

    def _power_on(self, plan: StoredPlan, outcome: Outcome) -> None:
        """Power on where the BMC reads off, wait for nova-compute to report up after that,
        then enable: before any migration. Only power actions made and verified count."""
        for name in plan.draft.power_on:
            if self.stop.is_set():
                outcome.interrupted = True
                return
            powered: list[bool] = []
            reason = self._power_on_host(plan, name, powered)
            if reason is not None:
                outcome.left_on[name] = f"not powered on: {reason}"
            elif powered:
                outcome.powered_on.append(name)

    def _power_on_host(self, plan: StoredPlan, name: str, powered: list[bool]) -> str | None:
        """Bring one host back through the guarded power path; a host whose BMC cannot be
        read, twice, is never taken for 'on': it stays disabled, journaled."""
        driver = self.power(name)
        if driver is not None and _unreadable(driver, self.settings.poll_interval):
            return self._note(plan, "power_on", name, journal.SKIPPED,
                              "its BMC cannot be read (power unknown): it stays disabled; "
                              "once its BMC answers, run the rollback again")
        try:
            return self.guarded.power_on(plan.id, self.hosts[name], driver, powered)
        except LeaseLostError as exc:
            return self._lost_at(exc)

    def _disable_drained(self, plan: StoredPlan, outcome: Outcome) -> None:
        """A drain: disable its hosts before any migration; a host that could not be
        disabled is left alone (its moves are skipped)."""
        for name in plan.draft.drain:
            if self.stop.is_set():
                outcome.interrupted = True
                return
            try:
                why = disable_for_drain(self.engine, self.nova, self.cloud, self.guard, plan.id,
                                        self.hosts[name], drain_reason(plan.id), self.report)
            except LeaseLostError as exc:
                why = self._lost_at(exc)
            if why is not None:
                self._block(name, f"not disabled for the drain: {why}")

    # -- power-off ---------------------------------------------------------------------

    def _preflight(self, plan: StoredPlan) -> None:
        """Before the first migration, log in to the BMC of every host the plan powers off
        and check the system it reaches (execution/bmc_preflight.py): a host whose BMC fails
        is not emptied; one journaled line names it."""
        targets = [self.hosts[h] for h in plan.draft.power_off
                   if h in self.hosts and h not in self._blocked]
        for name, why in preflight(self.power, targets, list(self.hosts.values())).items():
            self._block(name, f"not emptied: its BMC failed the pre-flight: {why}")
            self._note(plan, "bmc_preflight", name, journal.FAILED,
                       f"not emptied: its BMC failed the pre-flight: {why}")

    def _power_off(self, plan: StoredPlan, outcome: Outcome) -> None:
        not_low = self._demand_not_low() if plan.draft.power_off else None
        for host in plan.draft.power_off:
            if self.stop.is_set():
                outcome.interrupted = True
                outcome.left_on[host] = "interrupted before its power-off"
                continue
            why = self._blocked.get(host)
            if why is not None:
                outcome.left_on[host] = why
                continue
            if not_low is not None:
                outcome.left_on[host] = self._note(plan, "power_off", host, journal.SKIPPED,
                                                   f"emptied and left on: {not_low}")
                continue
            reason = self._power_off_host(plan, host)
            if reason is None:
                outcome.powered_off.append(host)
            else:
                outcome.left_on[host] = reason

    def _demand_not_low(self) -> str | None:
        """Why demand has not stayed low over [power] low_demand_window, or None."""
        window = self.settings.low_demand_window
        if window <= 0:
            return None
        now = datetime.now(timezone.utc)
        samples = demand_samples(self.engine, self.cloud,
                                 since=now - timedelta(minutes=window))
        return not_low_for_long(samples, now=now, window_minutes=window,
                                threshold=self.settings.low_demand_threshold)

    def _power_off_host(self, plan: StoredPlan, name: str) -> str | None:
        """Disable and power off one emptied host through the one guarded path."""
        host = self.hosts[name]
        driver = self.power(name)
        if driver is None:
            return self._note(plan, "power_off", name, journal.SKIPPED,
                              "no BMC is configured for it in the BMC file")
        if name not in plan.draft.power_off:
            return self._note(plan, "power_off", name, journal.SKIPPED,
                              "the plan does not power it off")
        reason = drain_reason(plan.id) if name in plan.draft.drain else \
            f"consolidator: emptied by plan {plan.id} for power-off"
        try:
            why = self.guarded.power_off(plan.id, host, driver, reason)
            if why is not None and name in plan.draft.drain:   # drained: stays disabled
                disable_for_drain(self.engine, self.nova, self.cloud, self.guard, plan.id,
                                  host, reason, self.report)
            return why
        except LeaseLostError as exc:
            return self._lost_at(exc)

    def _note(self, plan: StoredPlan, action: str, target: str, state: str,
              result: str) -> str:
        journal.record(self.engine, cloud=self.cloud, plan_id=plan.id, action=action,
                       target=target, state=state, result=result)
        self.report(f"  {target}: {result}")
        return result

    # -- resume ------------------------------------------------------------------------

    def _reconcile(self, plan: StoredPlan) -> set[str]:
        """Settle the journal of an interrupted run (consolidator.execution.resume)."""
        return reconcile(self.engine, self.nova, self.hosts, plan,
                         timeout=self.settings.migration_timeout,
                         poll=max(self.settings.poll_interval, 0.2), report=self.report)


#: What _migrate returns for a move it did not start (the run is stopping).
_NOT_STARTED = "not started"


def _unreadable(driver: PowerDriver, pause: float) -> bool:
    """Whether the BMC's power reads 'unknown', and again after a pause."""
    if read_power(driver) != POWER_UNKNOWN:
        return False
    time.sleep(min(pause, 1.0))
    return read_power(driver) == POWER_UNKNOWN


def demand_of(cluster: Cluster, move: Move) -> placement.Demand:
    """What a move's instance asks of its destination, keyed by its id."""
    inst = cluster.instances[cluster.instance_index[move.instance_id]]
    return placement.Demand(name=inst.id,
                            resources={rc: inst.amount(rc) for rc in cluster.resource_classes},
                            required=inst.required_traits, forbidden=inst.forbidden_traits)


def _params(move: Move) -> dict[str, object]:
    return {"instance": move.instance_name, "source": move.source,
            "destination": move.destination, "wave": move.wave}


def _summary(outcome: Outcome) -> str:
    parts = [f"{len(outcome.migrated)} migrated", f"{len(outcome.powered_off)} powered off"]
    if outcome.powered_on:
        parts.append(f"{len(outcome.powered_on)} powered on")
    if outcome.failed:
        first = next(iter(outcome.failed.items()))
        parts.append(f"{len(outcome.failed)} failed (first: {first[0]}: {first[1]})")
    if outcome.skipped:
        parts.append(f"{len(outcome.skipped)} skipped")
    if outcome.left_on:
        first = next(iter(outcome.left_on.items()))
        parts.append(f"{plural(len(outcome.left_on), 'host')} left on (first: {first[0]}: "
                     f"{first[1]})")
    if outcome.stopped:
        parts.append(f"stopped: {outcome.stopped}")
    return ", ".join(parts)
