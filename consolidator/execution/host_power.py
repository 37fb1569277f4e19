"""The one guarded power-off path, for the executor and for 'hosts power off' alike.

Disable the host's nova-compute with a reason, re-check that it is empty to Nova and to
Placement, journal, power off through the BMC and verify, then mark the service forced down
(a fenced host, as Nova's documentation asks). A host that is not empty is left on, enabled
again, and the journal says why. The emptiness is checked once more after the graceful
shutdown request, right before a forced power-off: if work arrived meanwhile, nothing is
forced, a host the graceful shutdown still took down (within another grace period) is powered
on again, and it is enabled again. A power-off that fails while the BMC still reads 'on' enables
the host again, so a BMC failure never strands capacity.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Host
from consolidator.core.wording import agree, plural
from consolidator.openstack.nova import Nova
from consolidator.power.driver import ForceWithheld, read_power, wait_for_state
from consolidator.store import journal

if TYPE_CHECKING:
    from consolidator.power.driver import PowerDriver
    from consolidator.store.leases import Guard

Reporter = Callable[[str], None]
#: Seconds between BMC reads while waiting out a graceful shutdown that was not forced.
WITHHELD_POLL_S = 0.2


@dataclass
class GuardedPowerOff:
    """Powers emptied hosts off for one actor (a plan, or an operator's command)."""

    engine: Engine
    nova: Nova
    cloud: str
    report: Reporter
    timeout: float
    #: The actor's lease: every journal row before a destructive call checks it in the same
    #: transaction (LeaseLostError, and no call, when it is no longer current).
    guard: Guard | None = None

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

    def run(self, plan_id: str | None, host: Host, driver: PowerDriver, reason: str
            ) -> str | None:
        """The whole sequence for one host; None when it is off and fenced, else why not."""
        problem = self.not_empty(host)
        if problem is not None:
            return self._note(plan_id, host, journal.SKIPPED, problem)
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id, action="disable",
                              target=host.name, params={"reason": reason}, guard=self.guard)
        try:
            self.nova.set_service(host.compute_host, enabled=False, reason=reason)
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            return str(exc)
        journal.finish(self.engine, entry, journal.SUCCEEDED, "disabled")
        problem = self.not_empty(host) or self._still_disabled(host, reason)
        if problem is not None:
            self.reenable(plan_id, host, problem)
            return self._note(plan_id, host, journal.SKIPPED, problem)
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id,
                              action="power_off", target=host.name, params={"driver": "bmc"},
                              guard=self.guard)
        self.report(f"  power off {host.name}")
        try:
            state = driver.power_off(graceful=True, timeout=self.timeout,
                                     before_force=lambda: self._recheck(host))
        except ForceWithheld as exc:
            return self._withheld(plan_id, host, driver, entry, str(exc))
        except ConsolidatorError as exc:
            read = read_power(driver)
            journal.finish(self.engine, entry, journal.FAILED, f"{exc}; the BMC reads {read}")
            if read == "on":
                self.reenable(plan_id, host, "its power-off failed and its BMC reads on")
            return str(exc)
        journal.finish(self.engine, entry, journal.SUCCEEDED, f"the BMC reads {state}")
        self._fence(plan_id, host)
        return None

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
            back = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id,
                                 action="power_on", target=host.name,
                                 params={"why": "its graceful shutdown completed after the "
                                                "re-check found work on it"},
                                 guard=self.guard)
            try:
                journal.finish(self.engine, back, journal.SUCCEEDED,
                               f"the BMC reads {driver.power_on(timeout=self.timeout)}")
            except ConsolidatorError as exc:
                journal.finish(self.engine, back, journal.FAILED, str(exc))
                return f"{why}; powering it on again failed: {exc}"
        self.reenable(plan_id, host, why)
        return why

    def _still_disabled(self, host: Host, reason: str) -> str | None:
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
            self.nova.force_down(host.compute_host, True)
            journal.finish(self.engine, entry, journal.SUCCEEDED, "forced down")
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))
            self.report(f"  {host.name}: off, but not marked forced down: {exc}")

    def reenable(self, plan_id: str | None, host: Host, why: str) -> None:
        """Enable a host's nova-compute again after a power-off that did not happen."""
        entry = journal.begin(self.engine, cloud=self.cloud, plan_id=plan_id, action="enable",
                              target=host.name, params={"why": why}, guard=self.guard)
        try:
            self.nova.set_service(host.compute_host, enabled=True)
            journal.finish(self.engine, entry, journal.SUCCEEDED, "enabled again")
        except ConsolidatorError as exc:
            journal.finish(self.engine, entry, journal.FAILED, str(exc))

    def _note(self, plan_id: str | None, host: Host, state: str, result: str) -> str:
        journal.record(self.engine, cloud=self.cloud, plan_id=plan_id, action="power_off",
                       target=host.name, state=state, result=result)
        self.report(f"  {host.name}: {result}")
        return result

