"""The executor's host steps, each asked of the gate (through the guarded power path) at the
moment it runs: power-on (before any migration), the drain's disable, the BMC pre-flight of
the hosts to empty, and the power-off of the emptied hosts."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from consolidator.core import host_gate as hg
from consolidator.core.demand import not_low_for_long
from consolidator.core.errors import ConsolidatorError
from consolidator.core.maintenance import drain_reason
from consolidator.core.plan import StoredPlan
from consolidator.core.rollback_plan import emptying_reason
from consolidator.execution.bmc_preflight import preflight
from consolidator.execution.drain_step import disable_for_drain
from consolidator.execution.run_terms import Outcome, Run
from consolidator.power.driver import POWER_UNKNOWN, read_power
from consolidator.store import journal
from consolidator.store.leases import LeaseLostError
from consolidator.store.snapshots import demand_samples

if TYPE_CHECKING:
    from consolidator.core.model import Host
    from consolidator.power.driver import PowerDriver


class HostSteps:
    """Power-on, drain disable, pre-flight and power-off for one run."""

    def __init__(self, run: Run) -> None:
        self.run = run

    # -- power-on ----------------------------------------------------------------------

    def power_on(self, plan: StoredPlan, outcome: Outcome) -> None:
        """Power on where the BMC reads off, wait for nova-compute to report up after that,
        then enable: before any migration. Only power actions made and verified count."""
        for name in plan.draft.power_on:
            if self.run.stop.is_set():
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
        run = self.run
        driver = run.power(name)
        if driver is not None and _unreadable(driver, run.settings.poll_interval):
            return self.note(plan, "power_on", name, journal.SKIPPED,
                             "its BMC cannot be read (power unknown): it stays disabled; "
                             "once its BMC answers, run the rollback again")
        try:
            return run.guarded.power_on(plan.id, run.hosts[name], driver, powered)
        except LeaseLostError as exc:
            return run.lost_at(exc)

    # -- the drain ---------------------------------------------------------------------

    def disable_drained(self, plan: StoredPlan, outcome: Outcome) -> None:
        """A drain: disable its hosts before any migration; a host that could not be
        disabled is left alone (its moves are skipped). A host the operator disabled keeps
        the operator's reason: it is emptied, not disabled again."""
        run = self.run
        for name in plan.draft.drain:
            if run.stop.is_set():
                outcome.interrupted = True
                return
            host = run.hosts[name]
            facts = run.gate.facts(host, read_bmc=False)
            held = hg.operator_hold(facts)
            if held is not None:
                self.record(name, hg.HELD, f"disabled by the operator: {held}")
                self.note(plan, "disable", name, journal.SKIPPED,
                          f"already disabled by the operator ({held}): its reason is kept")
                continue
            why = run.gate.ask(hg.DISABLE, host)
            if why is None:
                try:
                    why = disable_for_drain(run.engine, run.nova, run.cloud, run.guard,
                                            plan.id, host, drain_reason(plan.id), run.report)
                except LeaseLostError as exc:
                    why = run.lost_at(exc)
            if why is not None:
                run.block(name, f"not disabled for the drain: {why}")
            else:
                self.record(name, hg.DRAINING, f"disabled for the drain {plan.id}")

    # -- power-off ---------------------------------------------------------------------

    def preflight(self, plan: StoredPlan) -> None:
        """Before the first migration, log in to the BMC of every host the plan powers off
        and check the system it reaches (execution/bmc_preflight.py): a host whose BMC fails
        is not emptied; one journaled line names it."""
        run = self.run
        targets = [run.hosts[h] for h in plan.draft.power_off
                   if h in run.hosts and h not in run.blocked]
        failed = preflight(run.power, targets, list(run.hosts.values()))
        for name, why in failed.items():
            run.block(name, f"not emptied: its BMC failed the pre-flight: {why}")
            self.note(plan, "bmc_preflight", name, journal.FAILED,
                      f"not emptied: its BMC failed the pre-flight: {why}")
        emptied = [h for h in targets if h.name not in failed and h.name not in plan.draft.drain]
        held = self._held(emptied)
        for host in emptied:
            if host.name in held or self._reads_off(host.name):
                continue        # an off or held host keeps its record (issue 45)
            if not self.record(host.name, hg.EMPTYING, f"emptied by plan {plan.id}"):
                return

    def _held(self, hosts: list[Host]) -> set[str]:
        """The hosts a drain or the operator holds now (by their live service, else as
        recorded): the drain's or the operator's record stays, not 'emptying' (issue 45)."""
        run = self.run
        if not hosts:
            return set()
        try:
            services: dict[str, Any] | None = run.nova.services()
        except ConsolidatorError:
            services = None
        held = set()
        for host in hosts:
            if services is None:
                rec = run.gate.recorded(host.name)
                if rec is not None and rec.state in (hg.DRAINING, hg.DRAINED, hg.HELD):
                    held.add(host.name)
                continue
            facts = run.gate.facts(host, services=services, read_bmc=False)
            if hg.drain_of(facts) is not None or hg.operator_hold(facts) is not None:
                held.add(host.name)
        return held

    def power_off(self, plan: StoredPlan, outcome: Outcome) -> None:
        """Power off the emptied hosts; a host the plan could not power off is reported as
        left on only if its BMC says so (else as left off or unknown)."""
        run = self.run
        for name in plan.draft.drain:
            if name not in plan.draft.power_off and name not in run.blocked and \
                    not run.stop.is_set():
                self.record(name, hg.DRAINED, f"emptied by the drain {plan.id}")
        not_low = self._demand_not_low() if plan.draft.power_off else None
        for host in plan.draft.power_off:
            if run.stop.is_set():
                outcome.interrupted = True
                outcome.left_on[host] = "interrupted before its power-off"
                continue
            why = run.blocked.get(host)
            if why is not None:
                outcome.left_on[host] = why
                continue
            if not_low is not None:
                outcome.left_on[host] = self.note(plan, "power_off", host, journal.SKIPPED,
                                                  f"emptied and left on: {not_low}")
                continue
            reason = self._power_off_host(plan, host)
            if reason is None:
                outcome.powered_off.append(host)
                continue
            not_on = self._not_on(host)
            if not_on is None:
                outcome.left_on[host] = reason
            else:
                outcome.not_on[host] = f"{not_on}: {reason}"
        self._back_in_service(plan, outcome)
        self._drains_ended(plan, outcome)

    def _drains_ended(self, plan: StoredPlan, outcome: Outcome) -> None:
        """A drain's host the run disabled but could not empty (a migration or a pre-check
        failed) is still held by its drain once the plan has ended: it is recorded
        'drained', not 'draining' for ever (issue 45). An interrupted run leaves it to
        'apply --resume'."""
        run = self.run
        if outcome.interrupted or run.stop.is_set():
            return
        for name in plan.draft.drain:
            rec = run.gate.recorded(name)
            if rec is not None and rec.state == hg.DRAINING:
                why = run.blocked.get(name) or outcome.left_on.get(name) or "not emptied"
                if not self.record(name, hg.DRAINED,
                                   f"held by the drain {plan.id}, not emptied: {why}"):
                    return

    def _back_in_service(self, plan: StoredPlan, outcome: Outcome) -> None:
        """A host the plan meant to empty and left on, still enabled, is in service again:
        its recorded 'emptying' would otherwise outlive the plan (issue 45)."""
        run = self.run
        left = [h for h in outcome.left_on if h in plan.draft.power_off and h in run.hosts
                and (rec := run.gate.recorded(h)) is not None
                and rec.state == hg.EMPTYING]
        if not left:
            return
        try:
            services = run.nova.services()
        except ConsolidatorError:      # the state stays as it is; nothing is acted on
            return
        for name in left:
            if (services.get(run.hosts[name].compute_host) or {}).get("status") == "enabled" \
                    and not self.record(name, hg.IN_SERVICE,
                                        f"left on and enabled by plan {plan.id}: "
                                        f"{outcome.left_on[name]}"):
                return

    def _reads_off(self, name: str) -> bool:
        """Whether the host's BMC reads off (an older plan applied after a newer one powered
        it off, say)."""
        driver = self.run.power(name)
        return driver is not None and read_power(driver) == "off"

    def _not_on(self, name: str) -> str | None:
        """After a power-off that did not end cleanly: why the host may not be on (its BMC
        reads off, or its shutdown was requested and is not confirmed), or None."""
        run = self.run
        driver = run.power(name)
        state = read_power(driver) if driver is not None else None
        if state == "off":
            return "its BMC reads off"
        recorded = run.gate.recorded(name)
        if state != "on" and recorded is not None and recorded.state in (hg.POWERING_OFF,
                                                                          hg.OFF):
            return f"its BMC reads {state} after a shutdown was requested"
        return None

    def _demand_not_low(self) -> str | None:
        """Why demand has not stayed low over [power] low_demand_window, or None."""
        run = self.run
        window = run.settings.low_demand_window
        if window <= 0:
            return None
        now = datetime.now(timezone.utc)
        samples = demand_samples(run.engine, run.cloud, since=now - timedelta(minutes=window))
        return not_low_for_long(samples, now=now, window_minutes=window,
                                threshold=run.settings.low_demand_threshold)

    def _power_off_host(self, plan: StoredPlan, name: str) -> str | None:
        """Disable and power off one emptied host through the one guarded path."""
        run = self.run
        host = run.hosts[name]
        driver = run.power(name)
        if driver is None:
            return self.note(plan, "power_off", name, journal.SKIPPED,
                             "no BMC is configured for it in the BMC file")
        if name not in plan.draft.power_off:
            return self.note(plan, "power_off", name, journal.SKIPPED,
                             "the plan does not power it off")
        reason = drain_reason(plan.id) if name in plan.draft.drain else \
            emptying_reason(plan.id)
        try:
            why = run.guarded.power_off(plan.id, host, driver, reason)
            if why is not None and name in plan.draft.drain and \
                    run.gate.ask(hg.DISABLE, host) is None:   # drained: stays disabled
                disable_for_drain(run.engine, run.nova, run.cloud, run.guard, plan.id,
                                  host, reason, run.report)
            return why
        except LeaseLostError as exc:
            return run.lost_at(exc)

    def record(self, name: str, state: str, why: str) -> bool:
        """Record a host's state with the lease checked in the same transaction: a run that
        lost the lease (paused past it, say) records nothing over the new holder's states
        (issue 45). False, the run counted as having lost it, when it is no longer ours."""
        run = self.run
        try:
            run.gate.record(name, state, why, guard=run.guard)
        except LeaseLostError as exc:
            run.lost_at(exc)
            return False
        return True

    def note(self, plan: StoredPlan, action: str, target: str, state: str,
             result: str) -> str:
        """Journal a step decided without a call, and report it; the result."""
        run = self.run
        journal.record(run.engine, cloud=run.cloud, plan_id=plan.id, action=action,
                       target=target, state=state, result=result)
        run.report(f"  {target}: {result}")
        return result


def _unreadable(driver: PowerDriver, pause: float) -> bool:
    """Whether the BMC's power reads 'unknown', and again after a pause."""
    if read_power(driver) != POWER_UNKNOWN:
        return False
    time.sleep(min(pause, 1.0))
    return read_power(driver) == POWER_UNKNOWN
