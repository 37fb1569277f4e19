"""The one rule set over host state: may this actor take this step on this host, now?

Every host consolidator acts on has one recorded state (``STATES``), and every actor (apply,
resume, rollback, relief, the capacity watch, the ramp, drain and undrain, an operator's
``hosts power``) asks the gate right before each enable, disable, power or migration step.
The adapter (execution/gate.py) re-reads the live facts a rule needs (the nova-compute
service and its disabled reason, the BMC, the recorded state, the instance) into
``HostFacts`` and ``InstanceFacts``; ``verdict`` applies the rules to them and says go,
refuse (why), or wait for a shutdown that was requested but not confirmed off. Pure: no I/O.

The rules, in order:
- a rescue (powering a host back on because work landed on it) is never refused;
- hosts the operator's rules keep out (excluded hosts and aggregates) are touched by no plan,
  and hosts outside the scope by none of the daemon's own actors;
- a host the operator disabled (a reason that is not consolidator's, or none; an operator's
  'hosts power off --force' is the operator's too) is held: no actor enables it or gives it
  work, and none but the operator's own command disables it again (which would replace the
  operator's reason) or powers it on or off; the operator's 'hosts power on' ends the hold of
  their own 'hosts power off --force' (and enables the host);
- a drained host is enabled, powered on or given work only by its undrain, while its
  service stays disabled (the operator who enables it through Nova ends the drain);
- a host whose shutdown was requested and not yet confirmed off receives no work and is not
  enabled; a power-on of it waits until its BMC reads off;
- a host whose BMC reads off receives no work and is not enabled before it is powered on;
- an instance pinned by its metadata or of an excluded project is moved by no plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from consolidator.core.constraints import Rules, is_true
from consolidator.core.maintenance import drained_by
from consolidator.core.model import Host
from consolidator.core.rollback_plan import is_operator_power_off, is_ours
from consolidator.core.scope import left_alone

# -- the states a host is recorded in ----------------------------------------------------

IN_SERVICE = "in service"
DRAINING = "draining"
DRAINED = "drained"
EMPTYING = "emptying"
POWERING_OFF = "powering off"
OFF = "off"
POWERING_ON = "powering on"
HELD = "held by the operator"
#: Every recorded state, in the order of a host's life (docs/architecture.rst draws it).
STATES = (IN_SERVICE, DRAINING, DRAINED, EMPTYING, POWERING_OFF, OFF, POWERING_ON, HELD)

# -- the steps an actor asks about --------------------------------------------------------

ENABLE = "enable"
DISABLE = "disable"
POWER_ON = "power on"
POWER_OFF = "power off"
#: A live migration onto the host.
RECEIVE = "receive"
#: A live migration of an instance off the host.
MIGRATE = "migrate"
STEPS = (ENABLE, DISABLE, POWER_ON, POWER_OFF, RECEIVE, MIGRATE)

# -- the actors ---------------------------------------------------------------------------

APPLY = "apply"
RESUME = "resume"
ROLLBACK = "rollback"
RELIEF = "relief"
WATCH = "capacity watch"
RAMP = "ramp"
DRAIN = "drain"
UNDRAIN = "undrain"
#: An operator's 'hosts power on|off'.
OPERATOR = "hosts power"
#: Powering a host back on because work landed on it: never refused.
RESCUE = "rescue"
#: The daemon's cycle recording what a BMC reads (it takes no step).
CYCLE = "daemon cycle"
#: The daemon's own actors: they also keep to the [planner] scope.
DAEMON_ACTORS = frozenset({RELIEF, WATCH, RAMP})
#: Actors that run a stored plan.
PLAN_ACTORS = frozenset({APPLY, RESUME, ROLLBACK, RELIEF, WATCH, RAMP, DRAIN})

# -- the verdicts -------------------------------------------------------------------------

GO = "go"
REFUSE = "refuse"
#: Wait until the BMC reads off, then ask again (a shutdown is pending).
WAIT_OFF = "wait until off"


@dataclass(frozen=True)
class HostFacts:
    """What the gate knows of a host right now (read live by the adapter)."""

    host: Host
    #: The nova-compute service: 'enabled', 'disabled' or '?' (not found).
    status: str = "enabled"
    disabled_reason: str | None = None
    #: The BMC's power: 'on', 'off', 'unknown', or None when it was not read (or no BMC).
    power: str | None = None
    #: The recorded state (STATES), or None if consolidator never recorded one.
    recorded: str | None = None
    #: A shutdown was requested and is not confirmed off (and has not yet run out its time).
    shutdown_pending: bool = False


@dataclass(frozen=True)
class InstanceFacts:
    """What the gate knows of an instance to move, read live."""

    name: str
    metadata: dict[str, str] = field(default_factory=dict)
    project_id: str | None = None


@dataclass(frozen=True)
class Verdict:
    """GO, REFUSE (with why) or WAIT_OFF (with why)."""

    kind: str
    why: str = ""

    @property
    def go(self) -> bool:
        """Whether the step may be taken now."""
        return self.kind == GO


_GO = Verdict(GO)


def operator_hold(facts: HostFacts) -> str | None:
    """The operator's reason when they disabled the host themselves (consolidator's reasons
    start with 'consolidator:'; an operator's 'hosts power off --force' is theirs, whatever
    release wrote it), else None."""
    if facts.status != "disabled":
        return None
    reason = facts.disabled_reason or ""
    if is_ours(reason):
        return None
    return reason or "no reason given"


def drain_of(facts: HostFacts) -> str | None:
    """The drain plan that holds the host out of service (by its live reason), or None."""
    if facts.status == "disabled":
        plan = drained_by(facts.disabled_reason)
        if plan is not None:
            return plan
    return "" if facts.recorded in (DRAINING, DRAINED) and facts.status == "disabled" else None


def kept_out(host: Host, rules: Rules, actor: str) -> str | None:
    """Why the operator's rules keep this actor off the host: excluded (every plan), outside
    the scope (the daemon's own actors), or None."""
    if actor not in PLAN_ACTORS:
        return None
    scope = rules.scope if actor in DAEMON_ACTORS else None
    return left_alone(host, scope=scope, excluded_hosts=rules.excluded_hosts,
                      excluded_aggregates=rules.excluded_aggregates)


def pinned(instance: InstanceFacts, rules: Rules) -> str | None:
    """Why an instance may be moved by no plan (pinned by its metadata, or of an excluded
    project), or None."""
    if rules.exclude_key and is_true(instance.metadata.get(rules.exclude_key, "")):
        return f"it is pinned ({rules.exclude_key}=true)"
    if instance.project_id and instance.project_id in rules.excluded_projects:
        return f"its project {instance.project_id} is excluded ([planner] excluded_projects)"
    return None


def verdict(step: str, facts: HostFacts, rules: Rules, actor: str,
            instance: InstanceFacts | None = None) -> Verdict:
    """The one rule set: may `actor` take `step` on the host of `facts` now? For MIGRATE,
    facts are the source's and `instance` the one to move."""
    if actor == RESCUE:
        return _GO
    name = facts.host.name
    out = kept_out(facts.host, rules, actor)
    if out is not None:
        return Verdict(REFUSE, f"{name} is {out}: consolidator leaves it as it is")
    if step == MIGRATE:
        why = pinned(instance, rules) if instance is not None else None
        if why is not None:
            return Verdict(REFUSE, f"{instance.name if instance else '?'}: {why}")
        return _GO
    held = operator_hold(facts)
    if held is not None and (step in (ENABLE, RECEIVE) or actor != OPERATOR) \
            and not (actor == OPERATOR and step == ENABLE
                     and is_operator_power_off(facts.disabled_reason)):
        return Verdict(REFUSE, f"{name} is held by the operator (disabled: {held}): "
                               f"consolidator does not {_doing(step)} it")
    drain = drain_of(facts)
    if drain is not None:
        by = f" by plan {drain}" if drain else ""
        if step in (ENABLE, POWER_ON, RECEIVE) and actor != UNDRAIN \
                and not (actor == OPERATOR and step == POWER_ON):
            return Verdict(REFUSE, f"{name} is drained{by}: only 'consolidator hosts undrain "
                                   f"{name}' brings it back")
        # a plan made before the drain keeps its hands off too: the drain holds the host as
        # the operator left it (issue 45); only a drain (or their own power command) acts
        if step == POWER_OFF and actor not in (DRAIN, OPERATOR):
            return Verdict(REFUSE, f"{name} is drained{by}: only a drain with --power-off or "
                                   f"'consolidator hosts power off {name}' powers it off")
    if facts.shutdown_pending and facts.power != "off":
        if step == POWER_ON:
            return Verdict(WAIT_OFF, f"{name}: a shutdown was requested and its BMC reads "
                                     f"{facts.power or 'nothing'}, not yet off")
        if step in (ENABLE, RECEIVE):
            return Verdict(REFUSE, f"{name} may be going down (a shutdown was requested and "
                                   f"is not confirmed off): it gets no work and stays "
                                   f"disabled")
    if facts.power == "off" and step in (ENABLE, RECEIVE):
        return Verdict(REFUSE, f"{name}: its BMC reads off")
    return _GO


def _doing(step: str) -> str:
    return {ENABLE: "enable", DISABLE: "disable (replacing the reason)", RECEIVE:
            "move work onto", POWER_ON: "power on", POWER_OFF: "power off"}.get(step, step)
