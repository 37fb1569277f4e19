"""roll_back's sequence, with the cloud and the database replaced: show, confirm, approve,
run, and the cancel when another executor holds the lease."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from consolidator.app import rollback as rollback_run
from consolidator.core.errors import UsageError
from consolidator.store.leases import LeaseHeldError

PLAN = SimpleNamespace(id="p-1")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """What roll_back did, in order; prepare_rollback makes plan p-1 for snapshot s-1, stored
    at once (store=True: a dry run's scratch database) or by its store() once confirmed."""
    done: list[tuple[str, Any]] = []
    target = SimpleNamespace(info=SimpleNamespace(id="s-1"))

    def prepare(ctx: Any, ref: str, partial: bool, store: bool = True) -> SimpleNamespace:
        done.append(("prepare", ctx))
        later = None if store else (lambda: done.append(("store", PLAN.id)) or PLAN)
        return SimpleNamespace(plan=PLAN, target=target, store=later)
    monkeypatch.setattr(rollback_run, "prepare_rollback", prepare)
    monkeypatch.setattr(rollback_run, "dry_rollback_context", lambda ctx, ref: "dry")
    monkeypatch.setattr(rollback_run, "refuse_while_running", lambda ctx, ref: None)
    monkeypatch.setattr(rollback_run, "interrupted_rollback", lambda ctx, ref: PLAN)
    monkeypatch.setattr(rollback_run, "overtaken", lambda ctx, plan_id: None)
    monkeypatch.setattr(rollback_run, "approve",
                        lambda ctx, plan_id, reason: done.append(("approve", reason)))
    monkeypatch.setattr(rollback_run, "cancel",
                        lambda ctx, plan_id, reason: done.append(("cancel", plan_id)))
    return done


def roll(calls: list[tuple[str, Any]], *, answer: bool = True, dry_run: bool = False,
         resume: bool = False, run: Any = None) -> rollback_run.RollbackRun:
    """roll_back to s-1 with recording callbacks."""
    def confirm(question: str) -> bool:
        calls.append(("confirm", question))
        return answer

    def default_run(ctx: Any, plan_id: str, again: bool) -> str:
        calls.append(("run", (ctx, plan_id, again)))
        return "outcome"
    return rollback_run.roll_back("ctx", "s-1", partial=False, resume=resume, dry_run=dry_run,
                                  show=lambda prepared: calls.append(("show", prepared.plan)),
                                  confirm=confirm, run=run or default_run)


def test_it_shows_asks_approves_and_runs(calls: list[tuple[str, Any]]) -> None:
    result = roll(calls)
    assert [c[0] for c in calls] == ["prepare", "show", "confirm", "store", "approve", "run"]
    assert calls[2][1] == "roll back to snapshot s-1 now?"
    assert (result.plan_id, result.outcome) == ("p-1", "outcome")


def test_a_refusal_stores_and_approves_nothing(calls: list[tuple[str, Any]]) -> None:
    with pytest.raises(UsageError):
        roll(calls, answer=False)
    assert [c[0] for c in calls] == ["prepare", "show", "confirm"]


def test_a_dry_run_asks_nothing_and_runs_on_the_scratch_context(
        calls: list[tuple[str, Any]]) -> None:
    roll(calls, dry_run=True)
    assert [c[0] for c in calls] == ["prepare", "show", "approve", "run"]
    assert calls[0][1] == "dry" and calls[-1][1] == ("dry", "p-1", False)


def test_resume_runs_the_interrupted_plan(calls: list[tuple[str, Any]]) -> None:
    assert roll(calls, resume=True).plan_id == "p-1"
    assert calls == [("run", ("ctx", "p-1", True))]


def test_resume_refuses_an_overtaken_rollback(calls: list[tuple[str, Any]],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rollback_run, "overtaken",
                        lambda ctx, plan_id: "overtaken by a newer plan (plan p-2, proposed)")
    with pytest.raises(UsageError, match="plan p-1 is not resumed: it was overtaken by a newer"):
        roll(calls, resume=True)
    assert calls == []


def test_a_held_lease_cancels_the_approved_plan(calls: list[tuple[str, Any]]) -> None:
    def held(ctx: Any, plan_id: str, again: bool) -> str:
        raise LeaseHeldError("held")
    with pytest.raises(LeaseHeldError):
        roll(calls, run=held)
    assert calls[-1] == ("cancel", "p-1")


def test_a_held_lease_refuses_before_anything_is_prepared(calls: list[tuple[str, Any]],
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Issue 23, point 12: refused only after the plan was printed, leaving a cancelled plan
    and a 'before rollback' snapshot behind."""
    def held(ctx: Any, ref: str) -> None:
        raise LeaseHeldError("held")
    monkeypatch.setattr(rollback_run, "refuse_while_running", held)
    for resume in (False, True):
        with pytest.raises(LeaseHeldError):
            roll(calls, resume=resume)
    assert calls == []
