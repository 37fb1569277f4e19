"""A plan: its moves and power actions, its lifecycle, and its JSON contract.

proposed -> approved -> running -> succeeded | failed | cancelled; a newer plan for the same
cloud marks older proposed plans superseded; a plan a crash left running that the daemon may
not resume becomes interrupted (the operator resumes or cancels it). The store persists plans;
this module says what a plan is and which transitions are allowed, so that rendering, metrics
and reports need no database to read one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from consolidator.core.errors import ConsolidatorError
from consolidator.core.wording import state_phrase

#: The idle draw of a compute host measured in paper 004.
DEFAULT_IDLE_WATTS = 270.0


@dataclass(frozen=True)
class Move:
    """One live migration of a plan."""

    instance_id: str
    instance_name: str
    source: str
    destination: str
    wave: int


@dataclass(frozen=True)
class PlanDraft:
    """A checked plan before it is stored (it has no id yet)."""

    algorithm: str
    ranking: str | None
    migrations: tuple[Move, ...]
    power_off: tuple[str, ...]
    hosts_before: int
    hosts_after: int
    lower_bound: int
    migrations_lower_bound: int
    spare: int
    spare_hosts: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    idle_watts: float = DEFAULT_IDLE_WATTS
    #: Hosts to power on and enable before the migrations (rollback, morning ramp).
    power_on: tuple[str, ...] = ()
    #: Hosts the plan empties but leaves on, with why (no BMC configured for them).
    left_on: Mapping[str, str] = field(default_factory=dict)
    #: How -a auto or a budget chose this plan: algorithm, budget, why (front.py).
    choice: Mapping[str, Any] = field(default_factory=dict)

    #: Per host powered off: its idle draw from BMC readings (hosts missing here count at
    #: idle_watts), and how each was estimated (fit, measured or configured).
    host_watts: Mapping[str, float] = field(default_factory=dict)
    watts_basis: Mapping[str, str] = field(default_factory=dict)
    #: What the plan optimised: hosts (the algorithm's own choice) or energy.
    objective: str = "hosts"
    #: A drain (core/maintenance.py): the hosts it empties, disabled before the migrations.
    drain: tuple[str, ...] = ()

    @property
    def watts_saved(self) -> float:
        """Estimated power saved: each powered-off host's idle draw (measured where its BMC
        gave readings, else idle_watts)."""
        return float(sum(self.host_watts.get(h, self.idle_watts) for h in self.power_off))

    @property
    def measured_hosts(self) -> tuple[str, ...]:
        """The powered-off hosts whose saving comes from their BMC's readings."""
        return tuple(h for h in self.power_off
                     if self.watts_basis.get(h, "configured") != "configured")

    def energy_json(self) -> dict[str, Any]:
        """The saving as JSON: watts, kWh a day, per host, measured and fallen-back hosts."""
        measured = self.measured_hosts
        return {"objective": self.objective, "watts_saved": round(self.watts_saved, 1),
                "kwh_per_day": round(self.watts_saved * 24 / 1000, 2),
                "per_host": {h: self.host_watts.get(h, self.idle_watts)
                             for h in self.power_off},
                "measured": list(measured),
                "fell_back": [h for h in self.power_off if h not in measured],
                "idle_watts": self.idle_watts}


TRANSITIONS: dict[str, set[str]] = {
    "proposed": {"approved", "cancelled", "superseded"},
    "approved": {"running", "cancelled"},
    # running -> running and failed -> running: apply --resume after a crash or a signal;
    # the executor's lease, not the state, keeps two executors apart. A running plan is not
    # cancelled: it is stopped (SIGINT/SIGTERM) and then resumed or left failed.
    "running": {"running", "succeeded", "failed", "interrupted"},
    "failed": {"running"},
    # interrupted: left running by a crash and overtaken (a rollback, a newer plan), or found
    # by a daemon without auto_apply; nothing resumes it unless the operator does.
    "interrupted": {"running", "cancelled"},
    "succeeded": set(), "cancelled": set(), "superseded": set(),
}


class PlanStateError(ConsolidatorError):
    """A plan cannot go from its state to the one asked for; exit code 2, as apply's refusal
    of a plan in a state it cannot run."""

    exit_code = 2


@dataclass(frozen=True)
class StoredPlan:
    """A plan as stored: the draft, its identity and its state."""

    id: str
    cloud: str
    snapshot_id: str
    status: str
    created_at: datetime
    updated_at: datetime
    reason: str | None
    draft: PlanDraft

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON (the contract of DESIGN.md section 3, plus extra keys)."""
        d = self.draft
        return {
            "id": self.id, "cloud": self.cloud, "snapshot_id": self.snapshot_id,
            "algorithm": d.algorithm, "ranking": d.ranking, "status": self.status,
            "created_at": self.created_at.isoformat(), "updated_at": self.updated_at.isoformat(),
            "migrations": [{"instance_id": m.instance_id, "instance_name": m.instance_name,
                            "source": m.source, "destination": m.destination, "wave": m.wave}
                           for m in d.migrations],
            "power_off": list(d.power_off), "power_on": list(d.power_on),
            "left_on": dict(d.left_on),
            "spare_hosts": list(d.spare_hosts),
            "hosts_before": d.hosts_before, "hosts_after": d.hosts_after,
            "lower_bound": d.lower_bound, "migrations_lower_bound": d.migrations_lower_bound,
            "spare": d.spare, "watts_saved": d.watts_saved, "notes": list(d.notes),
            "options": dict(d.options), "reason": self.reason, "energy": d.energy_json(),
            "choice": dict(d.choice), "drain": list(d.drain),
        }




#: Every plan state, in lifecycle order.
STATES = ("proposed", "approved", "running", "succeeded", "failed", "interrupted", "cancelled",
          "superseded")


def check_transition(plan_id: str, current: str, status: str) -> None:
    """Raise PlanStateError unless a plan in `current` may become `status`."""
    if status not in TRANSITIONS.get(current, set()):
        hint = (": stop its apply with Ctrl-C (SIGINT) or SIGTERM, then 'consolidator apply "
                f"--resume {plan_id}' finishes it" if current == "running"
                and status == "cancelled" else "")
        raise PlanStateError(f"plan {plan_id} {state_phrase(current)}: it cannot become "
                             f"{status}{hint}")
