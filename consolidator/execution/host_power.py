"""The one home of host power, both directions, for every caller: the executor (plans,
rollbacks, ramps) and an operator's 'hosts power on|off'. Each holds the executor lease
(execution/lease_keeper.py) for as long as it acts, and every destructive call is preceded by
a journal row that checks the lease generation.

Power-off: disable the host's nova-compute with a reason, re-check that it is empty to Nova
and to Placement, journal, power off through the BMC (which first checks its system's
identity against bmc.yaml) and verify. The emptiness is checked once more after the graceful
shutdown request, right before a forced power-off: if work arrived meanwhile, nothing is
forced, a host the graceful shutdown still took down is powered on again and enabled. Then the
post-conditions: once the BMC reads off, the host is re-checked (servers, migrations, Placement
usage) and work that landed during the shutdown gets the host powered on again at once and
enabled, failing loudly; and its own nova-compute must stop reporting while no other compute
does (execution/compute_watch.py), else the entry reached another system: every further power
action is refused (``halted``) and that system is powered on again. Only then is the service
marked forced down (fenced). A power-off that fails while the host is still on (its BMC reads
on, or reads nothing and its nova-compute still reports) enables the host again, so a BMC
failure never strands capacity; the reason says how to recover.

Power-on: the BMC on where it reads off, the forced-down mark cleared, a nova-compute
heartbeat newer than that awaited, then the service enabled; each step journaled.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import Engine

from consolidator.core import host_gate as hg
from consolidator.core.errors import ConsolidatorError, StoreError
from consolidator.core.model import Host
from consolidator.core.rollback_plan import is_operator_power_off, is_ours
from consolidator.core.wording import agree, plural
from consolidator.execution.compute_watch import reporting, silent_after_power_off
from consolidator.execution.nova_fence import fence_of, nothing_sent
from consolidator.execution.nova_port import NovaPort
from consolidator.openstack.nova import up_after
from consolidator.power.driver import ForceWithheld, read_power, wait_for_state
from consolidator.store import journal
from consolidator.store.leases import LeaseLostError

if TYPE_CHECKING:
    from consolidator.execution.gate import Gate
    from consolidator.power.driver import PowerDriver
    from consolidator.store.leases import Guard

Reporter = Callable[[str], None]
T = TypeVar("T")
#: The journal action recording that a power-off silenced another compute: that host is not
#: powered off again until its BMC entry names its system.
MISWIRED = "bmc_miswired"
#: The longest wait for a heartbeat that tells whether a host whose BMC reads nothing is on.
HEARTBEAT_WAIT_S = 60.0
#: Seconds between BMC reads while waiting out a graceful shutdown that was not forced.
WITHHELD_POLL_S = 0.2
#: What keeps a drained host disabled (_hold_to_keep's word for it).
A_DRAIN = "a drain"


class NoLongerOurs(ConsolidatorError):
    """A host's service changed between the last check and its shutdown request (the
    operator held or enabled it): nothing is sent to its BMC."""


@dataclass
class GuardedPower:
    """Powers hosts off and on for one actor (a plan, or an operator's command)."""

    engine: Engine
    nova: NovaPort
    cloud: str
    report: Reporter
    timeout: float
    #: Seconds between two reads of nova-compute while waiting for it to come up.
    poll: float = 1.0
    #: The actor's lease: every journal row before a destructive call checks it in the same
    #: transaction (LeaseLostError, and no call, when it is no longer current).
    guard: Guard | None = None
    #: Why every further power action is refused: a power-off reached another system.
    halted: str | None = None
    #: The actor's gate (execution/gate.py): asked before each step, and keeper of each
    #: host's recorded state. None: no rules but the lease (a bare power path).
    gate: Gate | None = None

    # -- the gate, the recorded state and the fence -------------------------------------

    def _refused(self, step: str, host: Host) -> str | None:
        """Why the gate refuses the step on the host now, or None (no gate: None)."""
        return self.gate.ask(step, host) if self.gate is not None else None

    def _record(self, host: Host, state: str, why: str, *, actor: str | None = None) -> None:
        """Record the host's new state (journaled), when there is a gate."""
        if self.gate is not None:
            self.gate.record(host.name, state, why, actor=actor)

    def _at_last_moment(self, host: Host, state: str, why: str) -> None:
        """The fence, immediately before a BMC request: the lease generation is checked in
        the same transaction that records the host's new state (LeaseLostError, and no
        request, if it is no longer ours)."""
        if self.gate is not None:
            self.gate.record(host.name, state, why, guard=self.guard)
        elif self.guard is not None:
            with self.engine.begin() as conn:
                self.guard.check(conn)

    def _key(self) -> str:
        """The cloud's identity (what its lease and host states are keyed by), else its
        name: a bmc_miswired row is kept under it, so every clouds.yaml name of the cloud
        (and, under the name, an older release's row) stops the host's power-off."""
        return self.gate.key if self.gate is not None else self.cloud

    def not_empty(self, host: Host) -> str | None:
        """Why the host is not empty to Nova or Placement right now, or None: any server in
        any state of any project, any unfinished migration into or out of it (a live
        migration keeps its instance on the source until the end), any Placement usage."""
        servers = self.nova.servers_on(host.compute_host)
        if servers:
            return (f"{plural(len(servers), 'server')} {agree(len(servers), 'is', 'are')} "
                    "still on it")
        migrations = self.nova.unfinished_migrations(host.compute_host)
        if migrations:
            m = migrations[0]
            way = "into" if m.get("dest_compute") == host.compute_host else "out of"
            kind = m.get("migration_type") or "migration"
            return (f"{len(migrations)} unfinished migrations, e.g. {kind} {m.get('id')} {way} "
                    f"it ({m.get('status')})")
        held = self.nova.placement_usage(host.id)
        if held:
            rc, amount = next(iter(sorted(held.items())))
            return f"Placement still holds {amount:g} {rc} on it"
        return None

    def power_off(self, plan_id: str | None, host: Host, driver: PowerDriver, reason: str
                  ) -> str | None:
        """The whole sequence for one host; None when it is off and fenced, else why not."""
        if self.halted is not None:
            return self._note(plan_id, "power_off", host, journal.SKIPPED,
                              f"not powered off: power actions are stopped ({self.halted})")
        problem = self._refused(hg.POWER_OFF, host) or self.not_empty(host) or \
            self._once_miswired(host, driver)
        if problem is not None:
            return self._note(plan_id, "power_off", host, journal.SKIPPED, problem)
        kept = self._hold_to_keep(host)
        disabled_for: str | None = reason
        if kept is not None:      # the drain or the operator's hold stays what keeps it off
            disabled_for = kept[0]
            self._note(plan_id, "disable", host, journal.SUCCEEDED,
                       f"already disabled, its reason kept: {kept[1]}")
        else:
            entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id,
                                  action="disable", target=host.name, params={"reason": reason},
                                  guard=self.guard)
            try:
                self.nova.set_service(host.compute_host, enabled=False, reason=reason,
                                      before_request=fence_of(self.guard))
            except LeaseLostError as exc:
                nothing_sent(self.engine, entry, exc)
                raise
            except ConsolidatorError as exc:
                journal.finish(self.engine, entry, journal.FAILED, str(exc))
                return str(exc)
            journal.finish(self.engine, entry, journal.SUCCEEDED, "disabled")
        problem = self.not_empty(host) or self._still_disabled(host, disabled_for)
        if problem is not None:
            self.reenable(plan_id, host, problem)
            return self._note(plan_id, "power_off", host, journal.SKIPPED, problem)
        before = self.nova.services()       # who reports, for the post-conditions
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id,
                              action="power_off", target=host.name, params={"driver": "bmc"},
                              guard=self.guard)
        self.report(f"  power off {host.name}")
        requested: list[bool] = []

        def fence() -> None:
            if not requested:       # the operator may have held it since the read above
                changed = self._still_disabled(host, disabled_for)
                if changed is not None:
                    raise NoLongerOurs(changed)
            self._at_last_moment(host, hg.POWERING_OFF, f"shutdown requested ({reason})")
            requested.append(True)
        try:
            state = driver.power_off(graceful=True, timeout=self.timeout,
                                     before_force=lambda: self._recheck(host),
                                     before_request=fence)
        except NoLongerOurs as exc:
            journal.finish(self.engine, entry, journal.SKIPPED,
                           f"{exc}: nothing was sent to its BMC")
            self.report(f"  {host.name}: not powered off: {exc}")
            self.reenable(plan_id, host, str(exc))
            return str(exc)
        except LeaseLostError as exc:
            journal.finish(self.engine, entry, journal.UNCONFIRMED if requested else
                           journal.SKIPPED, f"{exc}: " + (
                               "not forced; the graceful shutdown already sent may still take "
                               "it down" if requested else "nothing was sent to its BMC"))
            raise
        except ForceWithheld as exc:
            return self._withheld(plan_id, host, driver, entry, str(exc))
        except ConsolidatorError as exc:
            return self._failed(plan_id, host, driver, entry, exc, before, bool(requested))
        self._despite_the_store("the end of its power-off", lambda: journal.finish(
            self.engine, entry, journal.SUCCEEDED, f"the BMC reads {state}"))
        self._despite_the_store("its state", lambda: self._record(
            host, hg.OFF, f"the BMC reads {state}"))
        problem = self._after_off(plan_id, host, driver, before)
        if problem is not None:
            return problem
        self._fence(plan_id, host)
        return None

    def _after_off(self, plan_id: str | None, host: Host, driver: PowerDriver,
                   before: dict[str, dict]) -> str | None:
        """The post-conditions of a power-off: no work landed in the window (else the host is
        powered on again at once and enabled), and its own nova-compute went silent while no
        other did (else every power action stops and the system is powered on again)."""
        landed = self._recheck(host)
        if landed is not None:
            why = f"work landed on it during its shutdown: {landed}"
            self.report(f"  FAILED {host.name}: {why}; powering it on again")
            failed = self._back_on(plan_id, host, driver, why)
            if failed is not None:
                return f"{why}; {failed}"
            return f"{why}; powered on again and {self._enable_after_rescue(plan_id, host, why)}"
        miswired = True
        try:
            wrong = silent_after_power_off(self.nova, host.compute_host, before,
                                           poll=self.poll, deadline_s=min(self.timeout, 180.0))
        except ConsolidatorError as exc:   # unverified: undone, but no entry is blamed
            wrong, miswired = f"its nova-compute could not be watched after the power-off: " \
                f"{exc}", False
        if wrong is None:
            return None
        self.halted = f"{host.name}: {wrong}"
        if miswired:
            journal.record(self.engine, cloud=self._key(), plan_id=plan_id, action=MISWIRED,
                           target=host.name, state=journal.FAILED, result=wrong)
        self.report(f"  FAILED {host.name}: {wrong}; every further power action is stopped")
        failed = self._back_on(plan_id, host, driver, wrong)
        if failed is None:
            self._enable_after_rescue(plan_id, host, wrong)
        return (f"{wrong}; every further power action is stopped; "
                f"{failed or 'the system its BMC entry reaches was powered on again'}; fix "
                f"the BMC entry (see 'consolidator bmc-check')")

    def _once_miswired(self, host: Host, driver: PowerDriver) -> str | None:
        """Why a host whose BMC entry once powered off another system may not be powered off
        until its entry names its system's identity (which every power action then checks)."""
        if driver.expected_identity():
            return None
        found = next((row for key in dict.fromkeys((self._key(), self.cloud))
                      for row in [journal.last(self.engine, cloud=key, action=MISWIRED,
                                               target=host.name)] if row is not None), None)
        if found is None:
            return None
        return (f"its BMC entry powered off another system on "
                f"{found.created_at:%Y-%m-%d %H:%M} UTC (journal row {found.id}); give the "
                f"entry its system's identity (system_uuid, system_guid...: see 'consolidator "
                f"bmc-check') before it is powered off again")

    def _back_on(self, plan_id: str | None, host: Host, driver: PowerDriver, why: str
                 ) -> str | None:
        """The rescue: power the BMC's system on again after a power-off that must not stand.
        A safety action: it needs no lease (the row names the guard it ran under, unchecked)
        and is journaled as a rescue. None if it reads on, else why not (saying it is off)."""
        entry = self._despite_the_store("the rescue's row", lambda: journal.begin(
            self.engine, cloud=self.cloud, plan_id=plan_id, action="power_on",
            target=host.name, params={"why": why, "rescue": True}, guard=self.guard,
            check=False))

        def finish(state: str, result: str) -> None:
            if entry is not None:
                self._despite_the_store("the rescue's end", lambda: journal.finish(
                    self.engine, entry, state, result))
        try:
            read = driver.power_on(timeout=self.timeout)
        except ConsolidatorError as exc:
            finish(journal.FAILED, f"rescue failed: {exc}")
            state = read_power(driver)
            return (f"powering it on again failed ({exc}): its BMC reads {state}"
                    + (", and work is on it" if state != "on" else ""))
        finish(journal.SUCCEEDED, f"rescue: the BMC reads {read}")
        self._despite_the_store("its state", lambda: self._record(
            host, hg.POWERING_ON, f"rescue: {why}", actor=hg.RESCUE))
        return None

    def _despite_the_store(self, what: str, write: Callable[[], T]) -> T | None:
        """A journal or state write on the safety path (the end of a power-off, a rescue):
        when the database fails (locked past its busy timeout, unreachable), say so and go
        on, so that no rescue is held back by the store."""
        try:
            return write()
        except StoreError as exc:
            self.report(f"  the journal could not record {what}: {exc}; going on")
            return None

    def _enable_after_rescue(self, plan_id: str | None, host: Host, why: str) -> str:
        """Enable a rescued host again if this actor still holds the lease; what was done."""
        try:
            done = self.reenable(plan_id, host, why)
        except (LeaseLostError, StoreError) as exc:
            self.report(f"  {host.name}: powered on again; left disabled: {exc}")
            return f"left disabled ({exc})"
        return "enabled" if done else "left disabled"

    def _failed(self, plan_id: str | None, host: Host, driver: PowerDriver, entry: int,
                exc: ConsolidatorError, before: dict[str, dict], requested: bool = False
                ) -> str:
        """A power-off that failed: an (empty) host still on is enabled again so that no
        capacity is stranded; the reason says how to recover. A host whose BMC accepted the
        shutdown and now reads nothing may still be going down: it stays disabled, in its
        'powering off' state, and nothing moves onto it."""
        read = read_power(driver)
        if requested and read != "on":
            journal.finish(self.engine, entry, journal.UNCONFIRMED,
                           f"{exc}; the BMC reads {read} after it accepted the shutdown")
            if read == "off":
                self._record(host, hg.OFF, f"the BMC reads off after: {exc}")
            return (f"{exc}; its BMC accepted the shutdown and now reads {read}: it may be "
                    f"going down, so it stays disabled and gets no work; check its BMC with "
                    f"'consolidator bmc-check', then 'consolidator hosts power on {host.name}' "
                    f"or roll back")
        still = host.compute_host in reporting(before, self.nova.services())
        if read not in ("on", "off") and not still:     # wait one heartbeat to know
            seen = (before.get(host.compute_host) or {}).get("updated_at")
            try:
                await_service_up(self.nova, host.compute_host, seen,
                                 min(self.timeout, HEARTBEAT_WAIT_S), self.poll)
                still = True
            except ConsolidatorError:
                still = False
        journal.finish(self.engine, entry, journal.FAILED,
                       f"{exc}; the BMC reads {read}"
                       f"{'; its nova-compute still reports' if still else ''}")
        if read == "on" or (read != "off" and still):
            self._record(host, hg.IN_SERVICE, f"its power-off failed ({exc}); it is still on")
            if self.reenable(plan_id, host, f"its power-off failed ({exc}); it is still on"):
                return (f"{exc}; it was left on and enabled again: check its BMC with "
                        f"'consolidator bmc-check', then plan again")
            return (f"{exc}; it was left on and disabled (see the journal): check its BMC "
                    f"with 'consolidator bmc-check'")
        return (f"{exc}; its power reads {read} and it stays disabled: check its BMC with "
                f"'consolidator bmc-check', then 'consolidator hosts power on {host.name}' "
                f"or roll back")

    def _recheck(self, host: Host) -> str | None:
        """The re-check between the graceful request and the forced power-off: why the
        host may not be forced off (not empty, or the check itself failed), or None."""
        try:
            return self.not_empty(host)
        except ConsolidatorError as exc:
            return f"the re-check of its emptiness failed: {exc}"

    def _withheld(self, plan_id: str | None, host: Host, driver: PowerDriver, entry: int,
                  why: str) -> str:
        """The host was not forced off: if its graceful shutdown still takes it down within
        another grace period, power it on again; then enable it. Journaled."""
        grace = getattr(getattr(driver, "config", None), "grace", self.timeout)
        read = wait_for_state(driver.power_state, "off",
                              time.monotonic() + min(grace, self.timeout), WITHHELD_POLL_S)
        journal.finish(self.engine, entry, journal.SKIPPED, f"{why}; the BMC reads {read}")
        self.report(f"  {host.name}: {why}")
        if read == "off":
            failed = self._back_on(plan_id, host, driver, "its graceful shutdown completed "
                                   "after the re-check found work on it")
            if failed is not None:
                return f"{why}; {failed}"
            self._enable_after_rescue(plan_id, host, why)
            return why
        self._record(host, hg.IN_SERVICE, f"its graceful shutdown did not take it down: {why}")
        self.reenable(plan_id, host, why)
        return why

    def _hold_to_keep(self, host: Host) -> tuple[str | None, str] | None:
        """(the live disabled reason, what it is) when a drain or the operator's own hold
        keeps the host disabled: a power-off must not replace that reason with its own, or
        the drain (the hold) is forgotten and relief or a rollback brings the host back."""
        if self.gate is not None:     # the gate's own reading, the recorded state included
            facts = self.gate.facts(host, read_bmc=False)
        else:
            service = self.nova.services().get(host.compute_host) or {}
            facts = hg.HostFacts(host=host, status=service.get("status", "?"),
                                 disabled_reason=service.get("disabled_reason"))
        if hg.drain_of(facts) is not None:
            return facts.disabled_reason, A_DRAIN
        held = hg.operator_hold(facts)
        if held is not None:
            return facts.disabled_reason, f"the operator's hold ({held})"
        return None

    def _record_kept(self, host: Host) -> None:
        """A host left disabled because its drain or the operator's hold keeps it so is
        recorded drained or held, not 'in service' (a power-off that failed records that
        first, to end its pending shutdown)."""
        kept = self._hold_to_keep(host)
        if kept is not None:
            self._record(host, hg.DRAINED if kept[1] == A_DRAIN else hg.HELD,
                         f"left disabled: kept by {kept[1]}")

    def _still_disabled(self, host: Host, reason: str | None) -> str | None:
        service = self.nova.services().get(host.compute_host) or {}
        if service.get("status") != "disabled" or service.get("disabled_reason") != reason:
            return "its nova-compute is no longer disabled for this power-off"
        return None

    def _fence(self, plan_id: str | None, host: Host) -> None:
        """Mark the powered-off host's nova-compute forced down (journaled)."""
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id,
                              action="force_down", target=host.name, params={},
                              guard=self.guard)
        try:
            self.nova.force_down(host.compute_host, True, before_request=fence_of(self.guard))
            journal.finish(self.engine, entry, journal.SUCCEEDED, "forced down")
        except LeaseLostError as exc:
            nothing_sent(self.engine, entry, exc)
            raise
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            self.report(f"  {host.name}: off, but not marked forced down: {exc}")

    def reenable(self, plan_id: str | None, host: Host, why: str) -> bool:
        """Enable a host's nova-compute again after a power-off that did not happen, unless
        the gate refuses (the operator disabled it meanwhile, a shutdown may still be under
        way...: it stays disabled, journaled); whether it was enabled."""
        refused = self._refused(hg.ENABLE, host)
        if refused is not None:
            self._note(plan_id, "enable", host, journal.SKIPPED, f"left disabled: {refused}")
            self._record_kept(host)
            return False
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id, action="enable",
                              target=host.name, params={"why": why}, guard=self.guard)
        try:
            self.nova.set_service(host.compute_host, enabled=True,
                                  before_request=fence_of(self.guard))
            journal.finish(self.engine, entry, journal.SUCCEEDED, "enabled again")
        except LeaseLostError as exc:
            nothing_sent(self.engine, entry, exc)
            raise
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            return False
        self._record(host, hg.IN_SERVICE, f"enabled again: {why}")
        return True

    def power_on(self, plan_id: str | None, host: Host, driver: PowerDriver | None,
                 powered: list[bool], *, only_ours: bool = False) -> str | None:
        """Bring one host back, each step journaled: the BMC on where it reads off (Nova may
        still report a powered-off compute up for service_down_time), the forced-down mark
        cleared, a nova-compute heartbeat newer than that awaited, the service enabled (with
        only_ours, only if consolidator disabled it). None when it is on and up, else why
        not; ``powered`` gets True if it powered the host on."""
        if self.halted is not None:
            return self._note(plan_id, "power_on", host, journal.SKIPPED,
                              f"not powered on: power actions are stopped ({self.halted})")
        refused = self._refused(hg.POWER_ON, host)
        if refused is not None:
            return self._note(plan_id, "power_on", host, journal.SKIPPED,
                              f"not powered on: {refused}")
        service = self.nova.services().get(host.compute_host) or {}
        state = read_power(driver) if driver is not None else None
        entry, read = None, ""
        if state == "off" or (state is None and service.get("state") != "up"):
            if driver is None:
                return self._note(plan_id, "power_on", host, journal.SKIPPED,
                                  "no BMC is configured for it in the BMC file")
            entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id,
                                  action="power_on", target=host.name,
                                  params={"bmc_read": state}, guard=self.guard)
            self.report(f"  power on {host.name}")
            try:
                read = driver.power_on(timeout=self.timeout, before_request=lambda: (
                    self._at_last_moment(host, hg.POWERING_ON, "power-on requested")))
            except LeaseLostError as exc:
                journal.finish(self.engine, entry, journal.SKIPPED,
                               f"{exc}: nothing was sent to its BMC")
                raise
            except ConsolidatorError as exc:
                failed = str(exc)
                journal.finish(self.engine, entry, journal.FAILED, failed)
                if read_power(driver) == "off":     # not 'powering on' for ever (issue 45)
                    self._despite_the_store("its state", lambda: self._record(
                        host, hg.OFF, f"its power-on failed ({failed}); the BMC reads off"))
                return failed
        if entry is not None or service.get("forced_down"):
            problem = self._come_up(plan_id, host, bool(service.get("forced_down")))
            if entry is not None:
                journal.finish(self.engine, entry,
                               journal.FAILED if problem else journal.SUCCEEDED,
                               f"the BMC reads {read}; {problem or 'nova-compute up'}")
            if problem is not None:
                return f"{problem}: it stays disabled"
            if entry is not None:
                powered.append(True)
        reason = service.get("disabled_reason")
        ours = is_ours(reason) or is_operator_power_off(reason)
        if service.get("status") == "enabled" or (only_ours and not ours):
            self._record(host, hg.IN_SERVICE if service.get("status") == "enabled" else hg.HELD,
                         "powered on")
            return None
        refused = self._refused(hg.ENABLE, host)
        if refused is not None:
            self._note(plan_id, "enable", host, journal.SKIPPED, f"left disabled: {refused}")
            self._record_kept(host)       # drained or held, not 'powering on' for ever
            return None if only_ours else f"powered on, left disabled: {refused}"
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id, action="enable",
                              target=host.name, params={}, guard=self.guard)
        try:
            self.nova.set_service(host.compute_host, enabled=True,
                                  before_request=fence_of(self.guard))
        except LeaseLostError as exc:
            nothing_sent(self.engine, entry, exc)
            raise
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            return str(exc)
        journal.finish(self.engine, entry, journal.SUCCEEDED, "enabled")
        self._record(host, hg.IN_SERVICE, "powered on and enabled")
        return None

    def _come_up(self, plan_id: str | None, host: Host, fenced: bool) -> str | None:
        """Clear the forced-down mark (if set), then wait for a nova-compute heartbeat newer
        than that; None once it reports up, else why not."""
        if fenced:
            problem = self._unfence(plan_id, host)
            if problem is not None:
                return problem
        seen = (self.nova.services().get(host.compute_host) or {}).get("updated_at")
        try:
            await_service_up(self.nova, host.compute_host, seen, self.timeout, self.poll)
        except ConsolidatorError as exc:
            return str(exc)
        return None

    def _unfence(self, plan_id: str | None, host: Host) -> str | None:
        """Clear the powered-on host's forced-down mark (journaled); None, or why not."""
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id,
                              action="unfence", target=host.name, params={},
                              guard=self.guard)
        try:
            self.nova.force_down(host.compute_host, False, before_request=fence_of(self.guard))
        except LeaseLostError as exc:
            nothing_sent(self.engine, entry, exc)
            raise
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            return str(exc)
        journal.finish(self.engine, entry, journal.SUCCEEDED, "no longer forced down")
        return None

    def _note(self, plan_id: str | None, action: str, host: Host, state: str,
              result: str) -> str:
        journal.record(self.engine, cloud=self.cloud, plan_id=plan_id, action=action,
                       target=host.name, state=state, result=result)
        self.report(f"  {host.name}: {result}")
        return result


def await_service_up(nova: NovaPort, compute_host: str, seen: str | None, timeout: float,
                     poll: float) -> None:
    """Wait for nova-compute to report up in a service record updated after ``seen`` (its
    updated_at when the wait began: the next heartbeat; None: any record that reads up). A
    service that still reads up from before a power cut proves nothing, and neither does a
    record our own call (clearing forced_down) just updated: Nova judges up from the last
    heartbeat, not from that update."""
    deadline = time.monotonic() + timeout
    while not up_after(nova.services().get(compute_host) or {}, seen):
        if time.monotonic() > deadline:
            raise ConsolidatorError(f"nova-compute on {compute_host} did not come up "
                                    f"within {timeout:.0f} s")
        time.sleep(poll)
