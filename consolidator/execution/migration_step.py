"""The executor's migration step: one live migration, journaled before the call, verified
after it (a fresh GET shows the server ACTIVE on the destination and its migration record is
completed), aborted or forced to complete at its timeout or on a second Ctrl-C."""

from __future__ import annotations

import time

from consolidator.core import host_gate as hg
from consolidator.core.errors import ConsolidatorError
from consolidator.core.plan import Move, StoredPlan
from consolidator.execution import progress as mp
from consolidator.execution.nova_fence import fence_of, nothing_sent
from consolidator.execution.progress import MigrationProgress, poll_delays
from consolidator.execution.run_terms import Run
from consolidator.openstack.nova import FINAL_MIGRATION_STATUSES
from consolidator.store import journal
from consolidator.store.leases import LeaseLostError

#: What migrate returns for a move it did not start (the run is stopping).
NOT_STARTED = "not started"


class Refused(str):
    """What migrate returns for a move the gate refused when it was to start (skipped and
    journaled by the caller, not a failed migration)."""


def move_params(move: Move) -> dict[str, object]:
    """A move as its journal row's params."""
    return {"instance": move.instance_name, "source": move.source,
            "destination": move.destination, "wave": move.wave}


class MigrationStep:
    """Live migrations for one run (its settings, Nova, journal and lease)."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def migrate(self, plan: StoredPlan, move: Move) -> str | None:
        """One live migration, journaled and verified; None on success, else the reason
        (NOT_STARTED once the run is stopping or the lease is lost)."""
        run = self.run
        dest = run.hosts[move.destination]
        if run.stop.is_set():
            return NOT_STARTED
        refused = run.checks.at_start(move)      # asked at the moment it starts
        if refused is not None:
            return Refused(refused)
        try:
            entry = run.begin(plan, "migrate", move.instance_id, move_params(move))
        except LeaseLostError:
            return NOT_STARTED
        run.report(f"  migrate {move.instance_name} {move.source} -> {move.destination}")
        started = time.monotonic()
        self.progress(move, mp.STARTED, started)
        if run.on_migration is not None:
            run.on_migration(move, mp.STARTED, 0.0, None)
        with run.running_lock:
            run.running += 1
        try:
            run.nova.live_migrate(move.instance_id, dest.compute_host,
                                  before_request=fence_of(run.guard))
            error = self.wait(move, dest.compute_host, started)
        except LeaseLostError as exc:       # the fence: nothing was sent
            nothing_sent(run.engine, entry, exc)
            self.progress(move, mp.FAILED, started)
            if run.on_migration is not None:
                run.on_migration(move, mp.FAILED, 0.0, f"not started: {run.lost_at(exc)}")
            return NOT_STARTED
        except ConsolidatorError as exc:
            error = str(exc)
        finally:
            with run.running_lock:
                run.running -= 1
        self.progress(move, mp.FAILED if error else mp.DONE, started)
        journal.finish(run.engine, entry, journal.FAILED if error else journal.SUCCEEDED,
                       error or f"on {move.destination} after {time.monotonic() - started:.1f} s")
        if run.on_migration is not None:
            run.on_migration(move, mp.FAILED if error else mp.DONE,
                             time.monotonic() - started, error)
        run.report(f"  {'FAILED' if error else 'done'} {move.instance_name}"
                   f"{': ' + error if error else ''} ({time.monotonic() - started:.1f} s)")
        return error

    def wait(self, move: Move, dest_host: str, started: float) -> str | None:
        """Poll until the migration ends (aborting or forcing it at the timeout); verify
        host, status and the migration record, polled until it is final."""
        settings, nova = self.run.settings, self.run.nova
        deadline = started + settings.migration_timeout
        handled, interrupted = "", False
        delays = poll_delays(settings.poll_first, settings.poll_interval)
        while True:
            time.sleep(next(delays))
            server = nova.server(move.instance_id)
            if server is None:
                return "the instance disappeared during its migration"
            if server.status != "MIGRATING" and not server.task_state:
                break
            self.progress(move, mp.RUNNING, started, live=True)
            if self.run.abort.is_set() and not handled:   # a second Ctrl-C
                interrupted = True
                handled = self.on_timeout(move, action="abort", why="interrupted")
                deadline = time.monotonic() + max(settings.migration_timeout / 10, 30.0)
            if time.monotonic() > deadline:
                if handled:
                    return (f"timed out after {settings.migration_timeout:.0f} s and "
                            f"{handled}, but it did not end: its host is left alone")
                handled = self.on_timeout(move)
                deadline = time.monotonic() + max(settings.migration_timeout / 10, 30.0)
        # Real Nova shows the instance ACTIVE on the destination a moment before the source
        # compute marks the record completed: the record is polled until it is final.
        record = self.final_record(move.instance_id, deadline)
        if handled and (interrupted or settings.on_timeout == "abort"):
            cause = "interrupted" if interrupted else \
                f"timed out after {settings.migration_timeout:.0f} s"
            return (f"{cause}; {handled} "
                    f"(migration {record.get('status', 'unknown')}); the instance is "
                    f"{server.status} on {server.compute_host}")
        if server.compute_host != dest_host or server.status != "ACTIVE":
            return (f"the migration ended with the instance {server.status} on "
                    f"{server.compute_host} (migration {record.get('status', 'unknown')})")
        if record.get("status") != "completed":
            return f"the migration record is {record.get('status', 'missing')}, not completed"
        return None

    def on_timeout(self, move: Move, action: str | None = None, why: str = "timed out"
                   ) -> str:
        """Abort the overdue (or interrupted) live migration through Nova, or force it to
        complete; journaled. Returns what was done."""
        run = self.run
        record = run.nova.latest_migration(move.instance_id) or {}
        action = action or ("abort" if run.settings.on_timeout == "abort"
                            else "force_complete")
        action, refused = self.asked(move, action)
        if refused is not None:
            journal.record(run.engine, cloud=run.cloud, plan_id=None, action=action,
                           target=move.instance_id, state=journal.SKIPPED,
                           result=f"not done: {refused}",
                           params={**move_params(move), "migration": record.get("id")})
            run.report(f"  {move.instance_name}: {why}; not {action.replace('_', '-')}d: "
                       f"{refused}")
            return f"did not {action.replace('_', '-')} it ({refused})"
        try:
            entry = journal.begin(run.engine, cloud=run.cloud, plan_id=None, action=action,
                                  target=move.instance_id,
                                  params={**move_params(move), "migration": record.get("id")},
                                  guard=run.guard)
        except LeaseLostError as exc:
            return f"did not {action.replace('_', '-')} it: {run.lost_at(exc)}"
        try:
            if action == "abort":
                run.nova.abort_migration(move.instance_id, record.get("id"),
                                         before_request=fence_of(run.guard))
            else:
                run.nova.force_complete(move.instance_id, record.get("id"),
                                        before_request=fence_of(run.guard))
        except LeaseLostError as exc:
            nothing_sent(run.engine, entry, exc)
            return f"did not {action.replace('_', '-')} it: {run.lost_at(exc)}"
        except ConsolidatorError as exc:
            journal.finish(run.engine, entry, journal.FAILED, str(exc))
            return f"{action.replace('_', '-')} through Nova failed ({exc})"
        done = "aborted it through Nova" if action == "abort" else \
            "forced it to complete through Nova"
        journal.finish(run.engine, entry, journal.SUCCEEDED, done)
        run.report(f"  {move.instance_name}: {why}; {done}")
        return done

    def asked(self, move: Move, action: str) -> tuple[str, str | None]:
        """The gate's word on ending an overdue migration: force-complete lands the instance
        on its destination (asked whether it may receive; if not, abort instead), abort
        keeps it on its source (asked whether that may take it back). The action to take,
        and why none may be taken (None: go)."""
        run = self.run
        if action == "force_complete":
            refused = run.gate.ask(hg.RECEIVE, run.hosts[move.destination])
            if refused is None:
                return action, None
            run.report(f"  {move.instance_name}: not forced to complete ({refused}); "
                       f"aborting it instead")
            action = "abort"
        return action, run.gate.ask(hg.RECEIVE, run.hosts[move.source])

    def final_record(self, server_id: str, deadline: float) -> dict:
        """The server's newest live-migration record, polled until its status is final (or
        the deadline passes)."""
        settings = self.run.settings
        deadline = max(deadline, time.monotonic() + settings.poll_interval * 20)
        delays = poll_delays(settings.poll_first, settings.poll_interval)
        while True:
            record = self.run.nova.latest_migration(server_id) or {}
            if record.get("status") in FINAL_MIGRATION_STATUSES or \
                    time.monotonic() > deadline:
                return record
            time.sleep(next(delays))

    def progress(self, move: Move, phase: str, started: float, *, live: bool = False
                 ) -> None:
        """Tell the progress listener (if any) about a migration; while it runs, with Nova's
        memory counters where the microversion gives them (2.23+)."""
        listener = self.run.progress
        if listener is None:
            return
        record: dict = {}
        if live:
            try:
                record = self.run.nova.migration_progress(move.instance_id) or {}
            except ConsolidatorError:
                record = {}
        listener(MigrationProgress(
            move.instance_name, move.source, move.destination, phase,
            time.monotonic() - started, record.get("memory_total_bytes"),
            record.get("memory_processed_bytes"), record.get("memory_remaining_bytes")))
