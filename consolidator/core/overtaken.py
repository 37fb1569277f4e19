"""Whether a plan a crash left running may be resumed by the daemon: only with auto_apply on,
and only when nothing newer has overtaken it (a rollback, a cancel, a newer plan, an
operator's power command). Pure: the caller reads the plans and the journal."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

#: Plans the daemon makes for the padding (power-on only): they overtake nothing, and they
#: are resumed whether auto_apply is on or not.
PADDING_ALGORITHMS = frozenset({"ramp"})


@dataclass(frozen=True)
class PlanMark:
    """What the decision needs of a plan: its id, kind, state and times."""

    id: str
    algorithm: str
    status: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class OperatorAction:
    """A journaled action outside any plan ('hosts power on|off')."""

    action: str
    target: str
    at: datetime


def why_not_resume(plan: PlanMark, others: Iterable[PlanMark],
                   operator: Iterable[OperatorAction] = (), *, auto_apply: bool
                   ) -> str | None:
    """Why the daemon must leave a plan that was left running alone, or None to resume it.

    ``plan.updated_at`` is when it last started running: a plan created after that, a plan
    cancelled after that, or an operator's power command after that has overtaken it.
    """
    since = plan.updated_at
    for other in sorted(others, key=lambda p: p.created_at, reverse=True):
        if other.id == plan.id or other.algorithm in PADDING_ALGORITHMS:
            continue
        if other.created_at > since:
            what = "a rollback" if other.algorithm == "rollback" else "a newer plan"
            return f"overtaken by {what} (plan {other.id}, {other.status})"
        if other.status == "cancelled" and other.updated_at > since:
            return f"overtaken by a cancel (plan {other.id} was cancelled since)"
    for done in operator:
        if done.at > since:
            return f"overtaken by an operator's {done.action} of {done.target}"
    if not auto_apply and plan.algorithm not in PADDING_ALGORITHMS:
        return "auto_apply is off, so only an operator resumes it"
    return None
