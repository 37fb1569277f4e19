"""The gate at the adapter edge: every actor asks it right before each enable, disable, power
or migration step. It re-reads the live facts (the nova-compute service and its disabled
reason, the BMC, the host's recorded state, the instance) and applies the one rule set of
core/host_gate.py. A refused step is skipped and reported by the caller, never forced.

It also keeps each host's recorded state (store/host_states.py): an operator hold it sees is
recorded, and a requested shutdown the BMC confirms off becomes 'off'. Elapsed time alone
never ends a pending shutdown: one still on past pending_s (by the database's clock, the one
clock every process shares) is reported as a warning asking the operator to act, and the host
stays disabled with no work. Only its BMC reading off, a rescue, or the operator's explicit
'hosts power on HOST --force' ends it. A power-on of a host whose shutdown is pending waits
until its BMC reads off (then powers it on), or leaves it disabled.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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
    from consolidator.store.leases import Guard

LOG = logging.getLogger(__name__)
Reporter = Callable[[str], None]
PowerLookup = Callable[[str], "PowerDriver | None"]


def cloud_key(nova: object, name: str) -> str:
    """What a cloud's lease and recorded host states are keyed by: its identity (Keystone URL
    and region, which every clouds.yaml name of it shares), else (a simulated cloud, or one
    that cannot tell) the name it was reached by."""
    identity = getattr(nova, "identity", None)
    return str(identity) if identity else name


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
    """One actor's gate over the hosts of one cloud. ``cloud`` is the name the actor was
    given; ``key`` (its identity) is what the recorded states are kept under, and the states
    recorded under the name by an older release are read (and adopted) while none is."""

    engine: Engine
    nova: NovaPort
    cloud: str
    power: PowerLookup
    actor: str
    rules: Rules = field(default_factory=Rules)
    report: Reporter = lambda _line: None
    plan_id: str | None = None
    #: Seconds after which a shutdown still pending is reported overdue (a warning and the
    #: metric consolidator_shutdowns_overdue); it stays pending all the same.
    pending_s: float = 900.0
    #: The longest a power-on waits for a pending shutdown to end.
    wait_s: float = 600.0
    #: Seconds between BMC reads while waiting.
    poll: float = 0.5
    key: str = ""

    def __post_init__(self) -> None:
        self.key = self.key or cloud_key(self.nova, self.cloud)

    # -- the live facts ----------------------------------------------------------------

    def facts(self, host: Host, *, services: Mapping[str, dict[str, Any]] | None = None,
              power: str | None = None, read_bmc: bool = True) -> hg.HostFacts:
        """The host's facts now: its service (from `services` if given, else read), its
        BMC (`power` if given, else read unless read_bmc is False), its recorded state."""
        if services is None:
            services = self.nova.services()
        service = services.get(host.compute_host) or {}
        record = self.recorded(host.name)
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
        """Whether a recorded 'powering off' is still pending: until its BMC reads off
        (recorded 'off'), however long that takes. Past pending_s (by the database's clock)
        it is reported overdue, for the operator to act on."""
        if power == "off":
            self.record(host.name, hg.OFF, f"its BMC reads off after the shutdown requested "
                                           f"at {record.since:%H:%M:%S} UTC")
            return False
        age = host_states.age_s(self.engine, record)
        if age > self.pending_s:
            line = (f"warning: {host.name}: its shutdown was requested {age:.0f} s ago and "
                    f"its BMC still reads {power or 'nothing'}: it stays disabled and gets "
                    f"no work; check the host, then wait for its BMC to read off, or end "
                    f"the shutdown with 'consolidator hosts power on {host.name} --force'")
            LOG.warning("%s", line)
            self.report(line)
        return True

    def end_pending(self, host: Host, power: str | None, why: str) -> str | None:
        """The operator's explicit end of a pending shutdown whose BMC still reads on (the
        shutdown will not happen): recorded 'in service', journaled; None, or why not."""
        record = self.recorded(host.name)
        if record is None or record.state != hg.POWERING_OFF:
            return None
        if power != "on":
            return (f"{host.name}: its BMC reads {power or 'nothing'}, not on: a shutdown "
                    f"that may be under way is not ended by --force")
        self.record(host.name, hg.IN_SERVICE, why)
        return None

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
                                         f"work; power it on once its BMC reads off (if you "
                                         f"know the shutdown will not happen: 'consolidator "
                                         f"hosts power on {host.name} --force')")
        return again

    # -- the recorded state ------------------------------------------------------------

    def recorded(self, host: str) -> host_states.HostState | None:
        """The host's recorded state (under the cloud's identity, else its name)."""
        return host_states.recorded(self.engine, self.key, host, legacy=self.cloud)

    def record(self, host: str, state: str, why: str, *, actor: str | None = None,
               guard: Guard | None = None) -> None:
        """Record the host's new state, journaled (nothing when it is already so); with a
        guard, the lease generation is checked in the same transaction."""
        host_states.change(self.engine, self.key, host, state, actor=actor or self.actor,
                           plan_id=self.plan_id, why=why, guard=guard, legacy=self.cloud)


def _instance_facts(server: ServerState, name: str) -> hg.InstanceFacts:
    return hg.InstanceFacts(name=name or server.id, metadata=dict(server.metadata or {}),
                            project_id=server.project_id)
