"""The gate at the adapter edge: every actor asks it right before each enable, disable, power
or migration step. It re-reads the live facts (the nova-compute service and its disabled
reason, the BMC, the host's recorded state, the instance) and applies the one rule set of
core/host_gate.py. A refused step is skipped and reported by the caller, never forced.

It also keeps each host's recorded state (store/host_states.py): an operator hold it sees is
recorded, a requested shutdown the BMC confirms off becomes 'off', and one whose time ran out
with the BMC still on is recorded as not having happened. A power-on of a host whose shutdown
is pending waits until its BMC reads off (then powers it on), or leaves it disabled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from consolidator.core import host_gate as hg
from consolidator.core.constraints import Rules
from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Host
from consolidator.power.driver import read_power
from consolidator.store import host_states

if TYPE_CHECKING:
    from consolidator.execution.nova_port import NovaPort
    from consolidator.openstack.nova import ServerState
    from consolidator.power.driver import PowerDriver

Reporter = Callable[[str], None]
PowerLookup = Callable[[str], "PowerDriver | None"]


def actor_of(algorithm: str, *, resume: bool = False, usage: bool = False) -> str:
    """The actor that runs a stored plan of this algorithm."""
    if algorithm == "rollback":
        return hg.ROLLBACK
    if algorithm == "drain-hosts":
        return hg.DRAIN
    if algorithm == "relief":
        return hg.RELIEF
    if algorithm == "ramp":
        return hg.WATCH if usage else hg.RAMP
    return hg.RESUME if resume else hg.APPLY


@dataclass
class Gate:
    """One actor's gate over the hosts of one cloud."""

    engine: Engine
    nova: NovaPort
    cloud: str
    power: PowerLookup
    actor: str
    rules: Rules = field(default_factory=Rules)
    report: Reporter = lambda _line: None
    plan_id: str | None = None
    #: Seconds a requested shutdown counts as pending while its BMC does not read off.
    pending_s: float = 900.0
    #: The longest a power-on waits for a pending shutdown to end.
    wait_s: float = 600.0
    #: Seconds between BMC reads while waiting.
    poll: float = 0.5

    # -- the live facts ----------------------------------------------------------------

    def facts(self, host: Host, *, services: Mapping[str, dict[str, Any]] | None = None,
              power: str | None = None, read_bmc: bool = True) -> hg.HostFacts:
        """The host's facts now: its service (from `services` if given, else read), its
        BMC (`power` if given, else read unless read_bmc is False), its recorded state."""
        if services is None:
            services = self.nova.services()
        service = services.get(host.compute_host) or {}
        record = host_states.recorded(self.engine, self.cloud, host.name)
        if power is None and read_bmc:
            driver = self.power(host.name)
            power = read_power(driver) if driver is not None else None
        pending = False
        if record is not None and record.state == hg.POWERING_OFF:
            pending = self._still_pending(host, record, power)
        return hg.HostFacts(host=host, status=service.get("status", "?"),
                            disabled_reason=service.get("disabled_reason"), power=power,
                            recorded=record.state if record else None,
                            shutdown_pending=pending)

    def _still_pending(self, host: Host, record: host_states.HostState,
                       power: str | None) -> bool:
        """Whether a recorded 'powering off' is still pending; a BMC that reads off confirms
        it (recorded 'off'), one still on past its time shows it did not happen."""
        if power == "off":
            self.record(host.name, hg.OFF, f"its BMC reads off after the shutdown requested "
                                           f"at {record.since:%H:%M:%S} UTC")
            return False
        age = (datetime.now(timezone.utc) - record.since).total_seconds()
        if power == "on" and age > self.pending_s:
            self.record(host.name, hg.IN_SERVICE,
                        f"the shutdown requested at {record.since:%H:%M:%S} UTC did not "
                        f"happen: its BMC still reads on {age:.0f} s later")
            return False
        return True

    # -- the one question --------------------------------------------------------------

    def ask(self, step: str, host: Host, *, instance: ServerState | None = None,
            instance_name: str = "", services: Mapping[str, dict[str, Any]] | None = None,
            power: str | None = None) -> str | None:
        """Why `step` on `host` is refused now, or None to go ahead. A power-on of a host
        whose shutdown is pending first waits for its BMC to read off."""
        read_bmc = step in (hg.POWER_ON, hg.ENABLE, hg.RECEIVE)
        try:
            facts = self.facts(host, services=services, power=power, read_bmc=read_bmc)
        except ConsolidatorError as exc:
            return f"{host.name}: its live state could not be read ({exc})"
        wanted = _instance_facts(instance, instance_name) if instance is not None else None
        found = hg.verdict(step, facts, self.rules, self.actor, wanted)
        if found.kind == hg.WAIT_OFF:
            found = self._wait_off(step, host, found)
        held = hg.operator_hold(facts)
        if held is not None and facts.recorded != hg.HELD:
            self.record(host.name, hg.HELD, f"disabled by the operator: {held}")
        return None if found.go else found.why

    def _wait_off(self, step: str, host: Host, found: hg.Verdict) -> hg.Verdict:
        """Wait until the host's BMC reads off (the pending shutdown done), then ask again;
        a refusal when it does not within wait_s."""
        driver = self.power(host.name)
        self.report(f"  {host.name}: a shutdown is pending; waiting up to {self.wait_s:.0f} s "
                    f"for its BMC to read off before powering it on")
        deadline = time.monotonic() + self.wait_s
        state = read_power(driver) if driver is not None else None
        while state != "off" and time.monotonic() < deadline:
            time.sleep(self.poll)
            state = read_power(driver) if driver is not None else None
        facts = self.facts(host, power=state)
        again = hg.verdict(step, facts, self.rules, self.actor)
        if again.kind == hg.WAIT_OFF:
            return hg.Verdict(hg.REFUSE, f"{found.why} after {self.wait_s:.0f} s: it may still "
                                         f"be going down, so it stays disabled and gets no "
                                         f"work; power it on once its BMC reads off")
        return again

    # -- the recorded state ------------------------------------------------------------

    def record(self, host: str, state: str, why: str, *, actor: str | None = None) -> None:
        """Record the host's new state, journaled (nothing when it is already so)."""
        host_states.change(self.engine, self.cloud, host, state, actor=actor or self.actor,
                           plan_id=self.plan_id, why=why)


def _instance_facts(server: ServerState, name: str) -> hg.InstanceFacts:
    return hg.InstanceFacts(name=name or server.id, metadata=dict(server.metadata or {}),
                            project_id=server.project_id)
