"""What one journal row says: an action, its target, and how it ended."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

RUNNING, SUCCEEDED, FAILED, SKIPPED = "running", "succeeded", "failed", "skipped"
#: The request reached the device (a BMC accepted a shutdown), but its end state could not be
#: confirmed: the host may be going down. Neither done nor failed; rollback treats it as done.
UNCONFIRMED = "unconfirmed"
#: Every action the executor, the guarded power path and the notifier journal
#: (tests/unit/test_journal_actions.py checks that the code writes no other).
ACTIONS = ("migrate", "abort", "force_complete", "disable", "enable", "power_off", "power_on",
           "force_down", "unfence", "bmc_preflight", "bmc_miswired", "notify",
           "approve", "cancel", "api_request")
#: The actions that record a person's decision or request, not a change of the cloud: they
#: overtake no interrupted plan and are no step of a run.
DECISIONS = ("approve", "cancel", "api_request")

#: Upper bounds of the migration-duration histogram's buckets, in seconds.
DURATION_BUCKETS = (1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


def bucket_label(bound: float) -> str:
    """A histogram bucket's le label, as Prometheus writes it ('+Inf' for infinity)."""
    return "+Inf" if bound == float("inf") else repr(float(bound))


@dataclass(frozen=True)
class Entry:
    """One journal row."""

    id: int
    cloud: str
    plan_id: str | None
    action: str
    target: str
    params: dict[str, Any]
    state: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    result: str | None
    lease_holder: str | None = None
    lease_generation: int | None = None
    #: user@host of the command (or daemon) that wrote the row.
    operator: str | None = None
    #: The cloud's identity (its Keystone URL and region), shared by its clouds.yaml names.
    cloud_key: str | None = None

    @property
    def hosts(self) -> tuple[str, ...]:
        """The hosts the action concerns: its target host, or a migration's source and
        destination."""
        named = [self.params.get(k) for k in ("source", "destination", "host")]
        found = [h for h in named if isinstance(h, str) and h]
        return tuple(found) if found else (self.target,)
