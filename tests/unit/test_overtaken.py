"""core/overtaken.py: which plans left running the daemon may resume (issue 23, point 5)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from consolidator.core.overtaken import OperatorAction, PlanMark, why_not_resume

T0 = datetime(2026, 11, 25, 2, 0, tzinfo=timezone.utc)


def mark(pid: str, minutes: int, *, algorithm: str = "firstfit", status: str = "proposed",
         updated: int | None = None) -> PlanMark:
    return PlanMark(pid, algorithm, status, T0 + timedelta(minutes=minutes),
                    T0 + timedelta(minutes=minutes if updated is None else updated))


KILLED = mark("p1", 0, status="running", updated=5)     # made at 02:00, started at 02:05


def test_nothing_newer_and_auto_apply_resumes() -> None:
    older = mark("p0", -60, status="succeeded")
    assert why_not_resume(KILLED, [KILLED, older], auto_apply=True) is None


def test_a_rollback_made_after_the_start_overtakes_it() -> None:
    rollback = mark("r1", 20, algorithm="rollback", status="succeeded")
    why = why_not_resume(KILLED, [KILLED, rollback], auto_apply=True)
    assert why is not None and "rollback" in why and "r1" in why


def test_a_plan_made_before_it_started_does_not() -> None:
    """A candidate made between its creation and its start (superseded when it was approved)
    is older than the run."""
    candidate = mark("p2", 2, status="superseded", updated=4)
    assert why_not_resume(KILLED, [KILLED, candidate], auto_apply=True) is None


def test_a_cancel_since_it_started_overtakes_it() -> None:
    cancelled = mark("p2", 2, status="cancelled", updated=30)
    why = why_not_resume(KILLED, [KILLED, cancelled], auto_apply=True)
    assert why is not None and "cancel" in why


def test_the_daemon_s_own_padding_plans_overtake_nothing() -> None:
    ramp = mark("ramp1", 30, algorithm="ramp", status="succeeded")
    assert why_not_resume(KILLED, [KILLED, ramp], auto_apply=True) is None


def test_an_operator_power_command_since_overtakes_it() -> None:
    done = OperatorAction("power_off", "c3", T0 + timedelta(minutes=40))
    earlier = OperatorAction("power_on", "c2", T0 - timedelta(minutes=40))
    assert why_not_resume(KILLED, [KILLED], [earlier], auto_apply=True) is None
    why = why_not_resume(KILLED, [KILLED], [earlier, done], auto_apply=True)
    assert why is not None and "c3" in why


def test_without_auto_apply_only_padding_plans_resume() -> None:
    why = why_not_resume(KILLED, [KILLED], auto_apply=False)
    assert why is not None and "auto_apply" in why
    ramp = mark("ramp1", 0, algorithm="ramp", status="running", updated=5)
    assert why_not_resume(ramp, [ramp], auto_apply=False) is None
