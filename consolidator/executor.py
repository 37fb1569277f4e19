"""The executor: runs a plan against the live cloud, safely, journaling every action.

For each wave it re-reads the live state and runs the pre-checks, then live-migrates
concurrently (a global limit; waves already bound each source host). A migration is done only
when a fresh GET shows the server ACTIVE on the destination and its migration record is
completed. A host whose migration fails or whose pre-check fails is left alone from then on.
Hosts the plan powers off are checked three times over right before the power call: no server
at all on them, their nova-compute disabled with a reason naming the plan, and the host in the
plan. Every action is a journal row written before the call and updated after it, so that
``apply --resume`` can reconcile a crash against the live state.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from consolidator.errors import ConsolidatorError
from consolidator.model import Cluster
from consolidator.nova import Nova, ServerState
from consolidator.planner import Move
from consolidator.store import journal
from consolidator.store.leases import acquire, acquire_or_raise, make_holder, release
from consolidator.store.plans import StoredPlan, set_status

#: Live-migration record statuses that Nova has not finished with yet.
UNFINISHED_MIGRATION = frozenset({"queued", "accepted", "preparing", "running",
                                  "post-migrating"})

if TYPE_CHECKING:
    from consolidator.power.base import PowerDriver

Reporter = Callable[[str], None]
PowerLookup = Callable[[str], "PowerDriver | None"]


@dataclass(frozen=True)
class ExecutorSettings:
    """Limits and timings of a run."""

    max_parallel: int = 4
    migration_timeout: float = 1800.0
    poll_interval: float = 2.0
    power_timeout: float = 600.0
    lease_ttl: float = 60.0
    dry_run: bool = False


@dataclass
class Outcome:
    """What a run did, for the summary and the plan's final state."""

    migrated: list[Move] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)          # instance name -> reason
    skipped: dict[str, str] = field(default_factory=dict)         # instance name -> reason
    powered_off: list[str] = field(default_factory=list)
    powered_on: list[str] = field(default_factory=list)
    left_on: dict[str, str] = field(default_factory=dict)          # host -> reason
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        """Whether everything the plan asked for was done."""
        return not (self.failed or self.skipped or self.left_on or self.interrupted)


class Executor:
    """Runs one stored plan against one cloud."""

    def __init__(self, engine: Engine, nova: Nova, cloud: str, cluster: Cluster,
                 settings: ExecutorSettings, power: PowerLookup,
                 report: Reporter = lambda _line: None) -> None:
        self.engine, self.nova, self.cloud = engine, nova, cloud
        self.cluster, self.settings, self.power, self.report = cluster, settings, power, report
        self.hosts = {h.name: h for h in cluster.hosts}
        self.stop = threading.Event()
        self.holder = make_holder()
        self._blocked: dict[str, str] = {}       # source host -> why it is left alone
        self._lock = threading.Lock()

    # -- the run -----------------------------------------------------------------------

    def run(self, plan: StoredPlan, *, resume: bool = False) -> Outcome:
        """Run (or resume) a plan; the plan ends succeeded, failed or stays as it was."""
        lease = f"executor:{self.cloud}"
        acquire_or_raise(self.engine, lease, self.holder, self.settings.lease_ttl,
                         f"an executor for cloud {self.cloud!r}")
        heartbeat = threading.Thread(target=self._heartbeat, args=(lease,), daemon=True)
        heartbeat.start()
        outcome = Outcome()
        try:
            if not self.settings.dry_run:
                set_status(self.engine, plan.id, "running",
                           reason="resumed" if resume else "started")
            done = self._reconcile(plan) if resume else set()
            self._power_on(plan, outcome)
            self._run_waves(plan, done, outcome)
            self._power_off(plan, outcome)
        finally:
            self.stop.set()
            heartbeat.join(timeout=5)
            release(self.engine, lease, self.holder)
        if not self.settings.dry_run:
            self._finish(plan, outcome)
        return outcome

    def _heartbeat(self, lease: str) -> None:
        while not self.stop.wait(self.settings.lease_ttl / 3):
            if not acquire(self.engine, lease, self.holder, self.settings.lease_ttl):
                self.report("lost the executor lease: stopping")
                self.stop.set()

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
        waves: dict[int, list[Move]] = defaultdict(list)
        for move in plan.draft.migrations:
            if move.instance_id not in done:
                waves[move.wave].append(move)
            else:
                outcome.migrated.append(move)
        total, finished = len(plan.draft.migrations), len(outcome.migrated)
        with ThreadPoolExecutor(max_workers=max(self.settings.max_parallel, 1)) as pool:
            for wave in sorted(waves):
                if self.stop.is_set():
                    outcome.interrupted = True
                    for move in waves[wave]:
                        outcome.skipped[move.instance_name] = "interrupted before it started"
                    continue
                ready = self._precheck(plan, waves[wave], outcome)
                self.report(f"wave {wave}: {len(ready)} migrations "
                            f"({finished}/{total} done so far)")
                if self.settings.dry_run:
                    for move in ready:
                        self.report(f"  would migrate {move.instance_name} "
                                    f"{move.source} -> {move.destination}")
                    continue
                for move, error in zip(ready, pool.map(lambda m: self._migrate(plan, m),
                                                       ready), strict=True):
                    finished += 1
                    if error is None:
                        outcome.migrated.append(move)
                    else:
                        outcome.failed[move.instance_name] = error
                        self._block(move.source, f"migration of {move.instance_name} failed")

    def _block(self, host: str, why: str) -> None:
        with self._lock:
            self._blocked.setdefault(host, why)

    def _precheck(self, plan: StoredPlan, moves: list[Move], outcome: Outcome) -> list[Move]:
        """The moves of a wave whose pre-checks pass on the live state; the others are
        skipped, and so is everything else from their source host."""
        services = self.nova.services()
        incoming: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        room: dict[str, dict[str, float]] = {}
        ready = []
        for move in moves:
            reason = self._blocked.get(move.source) or self._check_move(move, services)
            if reason is None:
                dest = self.hosts[move.destination]
                if move.destination not in room:
                    room[move.destination] = self.nova.room(dest.id)
                reason = self._check_room(move, room[move.destination], incoming)
            if reason is not None:
                outcome.skipped[move.instance_name] = reason
                self._block(move.source, f"pre-check of {move.instance_name} failed: {reason}")
                journal.record(self.engine, cloud=self.cloud, plan_id=plan.id,
                               action="migrate", target=move.instance_id,
                               state=journal.SKIPPED, result=reason,
                               params=_params(move))
                self.report(f"  skip {move.instance_name}: {reason}")
                continue
            ready.append(move)
        return ready

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

    def _check_room(self, move: Move, room: dict[str, float],
                    incoming: dict[str, list[float]]) -> str | None:
        inst = self.cluster.instances[self.cluster.instance_index[move.instance_id]]
        need = incoming[move.destination]
        wanted = (("VCPU", inst.vcpus), ("MEMORY_MB", inst.memory_mb), ("DISK_GB", inst.disk_gb))
        for k, (rc, amount) in enumerate(wanted):
            if amount and room.get(rc, 0.0) - need[k] < amount:
                return f"destination {move.destination} has no room left for {rc}"
        for k, (_, amount) in enumerate(wanted):
            need[k] += amount
        return None

    def _migrate(self, plan: StoredPlan, move: Move) -> str | None:
        """One live migration, journaled and verified; None on success, else the reason."""
        dest = self.hosts[move.destination]
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan.id, action="migrate",
                              target=move.instance_id, params=_params(move))
        self.report(f"  migrate {move.instance_name} {move.source} -> {move.destination}")
        started = time.monotonic()
        try:
            self.nova.live_migrate(move.instance_id, dest.compute_host)
            error = self._await(move, dest.compute_host, started)
        except ConsolidatorError as exc:
            error = str(exc)
        journal.finish(self.engine, entry, journal.FAILED if error else journal.SUCCEEDED,
                       error or f"on {move.destination} after {time.monotonic() - started:.1f} s")
        self.report(f"  {'FAILED' if error else 'done'} {move.instance_name}"
                    f"{': ' + error if error else ''} ({time.monotonic() - started:.1f} s)")
        return error

    def _await(self, move: Move, dest_host: str, started: float) -> str | None:
        """Poll until the migration ends; verify host, status and the migration record."""
        deadline = started + self.settings.migration_timeout
        while True:
            time.sleep(self.settings.poll_interval)
            server = self.nova.server(move.instance_id)
            if server is None:
                return "the instance disappeared during its migration"
            if server.status != "MIGRATING" and not server.task_state:
                break
            if time.monotonic() > deadline:
                return (f"timed out after {self.settings.migration_timeout:.0f} s; the migration "
                        f"may still be running: its host is left alone")
        record = self.nova.latest_migration(move.instance_id) or {}
        if server.compute_host != dest_host or server.status != "ACTIVE":
            return (f"the migration ended with the instance {server.status} on "
                    f"{server.compute_host} (migration {record.get('status', 'unknown')})")
        # Real Nova shows the instance ACTIVE on the destination a moment before the source
        # compute marks the record completed: wait for the record to end too.
        while record.get("status") in UNFINISHED_MIGRATION and time.monotonic() < deadline:
            time.sleep(self.settings.poll_interval)
            record = self.nova.latest_migration(move.instance_id) or {}
        if record.get("status") != "completed":
            return f"the migration record is {record.get('status', 'missing')}, not completed"
        return None

    # -- power-on ----------------------------------------------------------------------

    def _power_on(self, plan: StoredPlan, outcome: Outcome) -> None:
        """Power on, wait for nova-compute to come up, then enable: before any migration."""
        for name in plan.draft.power_on:
            if self.stop.is_set():
                outcome.interrupted = True
                return
            reason = self._power_on_host(plan, name)
            if reason is None:
                outcome.powered_on.append(name)
            else:
                outcome.left_on[name] = f"not powered on: {reason}"

    def _power_on_host(self, plan: StoredPlan, name: str) -> str | None:
        host = self.hosts[name]
        service = self.nova.services().get(host.compute_host) or {}
        if service.get("state") != "up":
            driver = self.power(name)
            if driver is None:
                return self._note(plan, "power_on", name, journal.SKIPPED,
                                  "no BMC is configured for it in the BMC file")
            if self.settings.dry_run:
                self.report(f"  would power on {name} and enable its nova-compute")
                return None
            entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan.id,
                                  action="power_on", target=name, params={})
            self.report(f"  power on {name}")
            try:
                driver.power_on(timeout=self.settings.power_timeout)
                self._await_service_up(host.compute_host)
            except ConsolidatorError as exc:
                journal.finish(self.engine, entry, journal.FAILED, str(exc))
                return str(exc)
            journal.finish(self.engine, entry, journal.SUCCEEDED, "on; nova-compute up")
        if service.get("status") == "enabled" or self.settings.dry_run:
            return None
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan.id, action="enable",
                              target=name, params={})
        try:
            self.nova.set_service(host.compute_host, enabled=True)
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            return str(exc)
        journal.finish(self.engine, entry, journal.SUCCEEDED, "enabled")
        return None

    def _await_service_up(self, compute_host: str) -> None:
        deadline = time.monotonic() + self.settings.power_timeout
        while (self.nova.services().get(compute_host) or {}).get("state") != "up":
            if time.monotonic() > deadline:
                raise ConsolidatorError(f"nova-compute on {compute_host} did not come up "
                                        f"within {self.settings.power_timeout:.0f} s")
            time.sleep(self.settings.poll_interval)

    # -- power-off ---------------------------------------------------------------------

    def _power_off(self, plan: StoredPlan, outcome: Outcome) -> None:
        for host in plan.draft.power_off:
            if self.stop.is_set():
                outcome.interrupted = True
                outcome.left_on[host] = "interrupted before its power-off"
                continue
            why = self._blocked.get(host)
            if why is not None:
                outcome.left_on[host] = why
                continue
            reason = self._power_off_host(plan, host)
            if reason is None:
                outcome.powered_off.append(host)
            else:
                outcome.left_on[host] = reason

    def _power_off_host(self, plan: StoredPlan, name: str) -> str | None:
        """Disable and power off one emptied host, re-checking right before each step."""
        host = self.hosts[name]
        driver = self.power(name)
        if driver is None:
            return self._note(plan, "power_off", name, journal.SKIPPED,
                              "no BMC is configured for it in the BMC file")
        servers = self.nova.servers_on(host.compute_host)
        if servers:
            return self._note(plan, "power_off", name, journal.SKIPPED,
                              f"{len(servers)} servers are still on it")
        if self.settings.dry_run:
            self.report(f"  would disable nova-compute on {name} and power it off")
            return None
        reason = f"consolidator: emptied by plan {plan.id} for power-off"
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan.id, action="disable",
                              target=name, params={"reason": reason})
        try:
            self.nova.set_service(host.compute_host, enabled=False, reason=reason)
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            return str(exc)
        journal.finish(self.engine, entry, journal.SUCCEEDED, "disabled")
        problem = self._power_preconditions(plan, name, reason)
        if problem is not None:
            self._reenable(plan, name, problem)
            return self._note(plan, "power_off", name, journal.SKIPPED, problem)
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan.id,
                              action="power_off", target=name, params={"driver": "bmc"})
        self.report(f"  power off {name}")
        try:
            state = driver.power_off(graceful=True, timeout=self.settings.power_timeout)
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            return str(exc)
        journal.finish(self.engine, entry, journal.SUCCEEDED, f"power {state}")
        return None

    def _power_preconditions(self, plan: StoredPlan, name: str, reason: str) -> str | None:
        """All four, read live right before the power call: named by the plan, no servers,
        disabled for this plan, and no Placement usage."""
        host = self.hosts[name]
        if name not in plan.draft.power_off:
            return "the plan does not power it off"
        servers = self.nova.servers_on(host.compute_host)
        if servers:
            return f"{len(servers)} servers appeared on it"
        service = self.nova.services().get(host.compute_host) or {}
        if service.get("status") != "disabled" or plan.id not in (
                service.get("disabled_reason") or ""):
            return "its nova-compute is not disabled for this plan"
        # A resize or migration to the host claims it in Placement before the server's
        # host changes: zero usage is the only sign of it.
        used = {rc: n for rc, n in self.nova.usages(host.id).items() if n}
        if used:
            return ("Placement still has allocations on it ("
                    + ", ".join(f"{rc} {n:g}" for rc, n in sorted(used.items())) + ")")
        return None

    def _reenable(self, plan: StoredPlan, name: str, why: str) -> None:
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan.id, action="enable",
                              target=name, params={"why": why})
        try:
            self.nova.set_service(self.hosts[name].compute_host, enabled=True)
            journal.finish(self.engine, entry, journal.SUCCEEDED, "enabled again")
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))

    def _note(self, plan: StoredPlan, action: str, target: str, state: str,
              result: str) -> str:
        if not self.settings.dry_run:
            journal.record(self.engine, cloud=self.cloud, plan_id=plan.id, action=action,
                           target=target, state=state, result=result)
        self.report(f"  {target}: {result}")
        return result

    # -- resume ------------------------------------------------------------------------

    def _settle(self, server_id: str) -> ServerState | None:
        """The server once a migration that outlived its executor has ended (or timed out)."""
        deadline = time.monotonic() + self.settings.migration_timeout
        server = self.nova.server(server_id)
        if server is not None and (server.status == "MIGRATING" or server.task_state):
            self.report(f"resume: waiting for the migration of {server_id} to end")
        while server is not None and (server.status == "MIGRATING" or server.task_state):
            if time.monotonic() > deadline:
                break
            time.sleep(max(self.settings.poll_interval, 0.2))
            server = self.nova.server(server_id)
        return server

    def _reconcile(self, plan: StoredPlan) -> set[str]:
        """Settle the journal of an interrupted run against the live state; return the
        instances already where the plan wants them."""
        moves = {m.instance_id: m for m in plan.draft.migrations}
        done: set[str] = set()
        for entry in journal.entries(self.engine, plan_id=plan.id, state=journal.RUNNING):
            move = moves.get(entry.target)
            if move is None:
                journal.finish(self.engine, entry.id, journal.FAILED,
                               "interrupted; reconciled on resume")
                continue
            server = self._settle(move.instance_id)
            there = (server is not None and server.status == "ACTIVE"
                     and server.compute_host == self.hosts[move.destination].compute_host)
            journal.finish(self.engine, entry.id, journal.SUCCEEDED if there else journal.FAILED,
                           "found on its destination on resume" if there
                           else "interrupted; the instance is not on its destination")
        for move in plan.draft.migrations:
            server = self.nova.server(move.instance_id)
            if server is not None and server.status == "ACTIVE" and \
                    server.compute_host == self.hosts[move.destination].compute_host:
                done.add(move.instance_id)
        self.report(f"resume: {len(done)} of {len(moves)} migrations already done")
        return done


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
        parts.append(f"{len(outcome.left_on)} hosts left on")
    return ", ".join(parts)
