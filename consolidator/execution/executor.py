"""The executor: runs a plan against the live cloud, safely, journaling every action.

The run loop lives here; its steps live beside it, each asking the gate (execution/gate.py,
the one rule set of core/host_gate.py) at the moment it runs: the host steps
(execution/power_steps.py: power-on, the drain's disable, the BMC pre-flight, power-off), the
pre-checks of each wave's moves (execution/move_checks.py) and the live migrations
(execution/migration_step.py).

Moves run from a queue (consolidator.execution.move_queue, move_runner): a move starts as soon
as the earlier-wave moves touching its source or destination have succeeded and a slot is free
(overall and per destination), after its pre-checks on the live state; a slow move delays only
the moves that depend on it, and a failed one holds them back. A migration is done only when
a fresh GET shows the server ACTIVE on the destination and its migration record is completed.
A host whose migration fails or whose pre-check fails is left alone from then on. Hosts the
plan powers off are checked three times over right before the power call: no server at all on
them, their nova-compute disabled with a reason naming the plan, and the host in the plan.
Every action is a journal row written before the call and updated after it, so that
``apply --resume`` can reconcile a crash against the live state.

The run holds the lease ``executor:<cloud>`` (under the cloud's identity, and under its
clouds.yaml name: execution/lease_keeper.py). Every journal row written before a destructive
call (migrate, disable, enable, power on, power off) checks the lease generation in the same
transaction, and so does the fence right before each BMC request, so a process that lost the
lease makes no further call; a renewal that fails in any way counts as losing it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqlalchemy import Engine

from consolidator.core.constraints import Rules
from consolidator.core.model import Cluster
from consolidator.core.plan import Move, StoredPlan
from consolidator.core.wording import plural
from consolidator.execution.gate import Gate, actor_of
from consolidator.execution.host_power import GuardedPower
from consolidator.execution.lease_keeper import LeaseKeeper
from consolidator.execution.migration_step import NOT_STARTED, MigrationStep, Refused
from consolidator.execution.move_checks import MoveChecks, demand_of
from consolidator.execution.move_queue import MoveQueue
from consolidator.execution.move_runner import MoveCallbacks, run_moves
from consolidator.execution.nova_port import NovaPort
from consolidator.execution.power_steps import HostSteps
from consolidator.execution.progress import MigrationListener, ProgressListener
from consolidator.execution.resume import reconcile
from consolidator.execution.run_terms import (  # re-exported: callers import them here
    ExecutorSettings,
    Outcome,
    PowerLookup,
    Reporter,
)
from consolidator.store import journal
from consolidator.store.leases import Guard, LeaseLostError
from consolidator.store.plans import set_status

__all__ = ["Executor", "ExecutorSettings", "Outcome", "PowerLookup", "Reporter", "demand_of"]


class Executor:
    """Runs one stored plan against one cloud."""

    def __init__(self, engine: Engine, nova: NovaPort, cloud: str, cluster: Cluster,
                 settings: ExecutorSettings, power: PowerLookup,
                 report: Reporter = lambda _line: None, rules: Rules | None = None) -> None:
        self.engine, self.nova, self.cloud = engine, nova, cloud
        self.cluster, self.settings, self.power, self.report = cluster, settings, power, report
        self.hosts = {h.name: h for h in cluster.hosts}
        #: The one gate every step asks (its actor is set when the run starts).
        self.gate = Gate(engine, nova, cloud, power, actor="apply", rules=rules or Rules(),
                         report=lambda line: self.report(line),
                         pending_s=settings.power_timeout, wait_s=settings.power_timeout,
                         poll=max(min(settings.poll_interval, 1.0), 0.05))
        self.guarded = GuardedPower(engine, nova, cloud, report, settings.power_timeout,
                                    settings.poll_interval, gate=self.gate)
        self.stop = threading.Event()
        #: Set by a second Ctrl-C: abort the running migrations through Nova now.
        self.abort = threading.Event()
        #: Live migrations in flight (what a Ctrl-C waits for).
        self.running = 0
        self.running_lock = threading.Lock()
        #: Who hears of each running migration's progress (None: nobody; nothing is read).
        self.progress: ProgressListener | None = None
        #: Told once the plan is running (notifications); None: nobody.
        self.on_started: Callable[[], None] | None = None
        #: Told of each live migration's start and end (notifications); None: nobody.
        self.on_migration: MigrationListener | None = None
        self.guard: Guard | None = None
        #: The token this run holds the executor lease under (set when the run takes it).
        self.holder = ""
        #: Source hosts left alone from now on -> why.
        self.blocked: dict[str, str] = {}
        self._lock = threading.Lock()
        self.steps = HostSteps(self)
        self.checks = MoveChecks(self)
        self.migrations = MigrationStep(self)

    # -- the run -----------------------------------------------------------------------

    def run(self, plan: StoredPlan, *, resume: bool = False) -> Outcome:
        """Run (or resume) a plan; the plan ends succeeded, failed or stays as it was."""
        keeper = LeaseKeeper(self.engine, self.cloud, self.settings.lease_ttl,
                             key=self.gate.key, on_lost=self._lose, report=self.report)
        self.holder = keeper.holder
        self.gate.actor = actor_of(plan.draft.algorithm, resume=resume,
                                   usage=any(n.startswith("usage:") for n in plan.draft.notes))
        self.gate.plan_id = plan.id
        outcome = Outcome()
        with keeper as guard:
            self.guard = self.guarded.guard = guard
            try:
                set_status(self.engine, plan.id, "running",
                           reason="resumed" if resume else "started")
                if self.on_started is not None:
                    self.on_started()
                done = self._reconcile(plan) if resume else set()
                self.steps.power_on(plan, outcome)
                self.steps.disable_drained(plan, outcome)
                self.steps.preflight(plan)
                self._run_waves(plan, done, outcome)
                self.steps.power_off(plan, outcome)
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

    def lost_at(self, exc: LeaseLostError) -> str:
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

    def begin(self, plan: StoredPlan, action: str, target: str,
              params: dict[str, object]) -> int:
        """The journal row before a destructive call, checking the lease generation in the
        same transaction; LeaseLostError (after stopping the run) if it is not ours."""
        try:
            return journal.begin(self.engine, cloud=self.cloud, plan_id=plan.id, action=action,
                                 target=target, params=params, guard=self.guard)
        except LeaseLostError as exc:
            self.lost_at(exc)
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
            elif error is NOT_STARTED:
                outcome.interrupted = True
                outcome.skipped[move.instance_name] = self._stopped_reason()
            elif isinstance(error, Refused):    # refused by the gate when it was to start
                self.checks.skip(plan, move, str(error), outcome)
            else:
                outcome.failed[move.instance_name] = error
                self.block(move.source, f"migration of {move.instance_name} failed")

        def skip(move: Move, reason: str) -> None:
            if self.stop.is_set():
                outcome.interrupted = True
                outcome.skipped[move.instance_name] = self._stopped_reason()
            else:
                self.checks.skip(plan, move, reason, outcome)

        run_moves(MoveQueue(plan.draft.migrations, done), MoveCallbacks(
            precheck=lambda moves: self.checks.precheck(plan, moves, outcome),
            migrate=lambda move: self.migrations.migrate(plan, move), finished=finished,
            skip=skip, stopping=self.stop.is_set, stopped_reason=self._stopped_reason,
            report=self.report),
            max_parallel=self.settings.max_parallel,
            max_per_destination=self.settings.max_per_destination,
            total=len(plan.draft.migrations), finished=len(outcome.migrated))

    def _await(self, move: Move, dest_host: str, started: float) -> str | None:
        """Wait for one started migration to end, verified (execution/migration_step.py)."""
        return MigrationStep(self).wait(move, dest_host, started)

    def block(self, host: str, why: str) -> None:
        """Leave a source host alone from now on (the first reason stays)."""
        with self._lock:
            self.blocked.setdefault(host, why)

    # -- resume ------------------------------------------------------------------------

    def _reconcile(self, plan: StoredPlan) -> set[str]:
        """Settle the journal of an interrupted run (consolidator.execution.resume)."""
        return reconcile(self.engine, self.nova, self.hosts, plan,
                         timeout=self.settings.migration_timeout,
                         poll=max(self.settings.poll_interval, 0.2), report=self.report)


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
    if outcome.not_on:
        first = next(iter(outcome.not_on.items()))
        parts.append(f"{plural(len(outcome.not_on), 'host')} not powered off cleanly and "
                     f"not on (first: {first[0]}: {first[1]})")
    if outcome.stopped:
        parts.append(f"stopped: {outcome.stopped}")
    return ", ".join(parts)
