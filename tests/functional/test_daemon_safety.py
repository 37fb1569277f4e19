"""Issue 23, points 5 and 11: the daemon and interrupted plans, and its lost cycles.

The daemon resumes a plan a crash left running only with auto_apply on, and only when nothing
newer has overtaken it (a rollback, a cancel, a newer plan); otherwise the plan becomes
interrupted and the log says so. No cycle is lost without a logged reason; 'daemon --once'
gives its lease back however the cycle ends; the capacity watch logs no traceback while an
apply runs; a standby does not warn at every heartbeat."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest
import time_machine

from consolidator.app.apply import PlanRun
from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.review import approve
from consolidator.app.rollback import roll_back
from consolidator.app.snapshots import record_snapshot
from consolidator.daemon import Daemon
from consolidator.store import journal
from consolidator.store.leases import acquire, current
from consolidator.store.plans import load_plan, save_plan
from tests.functional.test_daemon import (  # noqa: F401 - bed is the fixture
    MORNING,
    NIGHT,
    bed,
    make_daemon,
    powered,
    scenario,
)
from tests.functional.test_rollback_intent import Dies, Killed, assert_as_recorded
from tests.functional.waits import PATIENCE_S, wait_until

LOGGER = "consolidator.daemon"


def crashed_apply(daemon: Daemon) -> tuple[Any, str]:
    """An apply killed (kill -9) at its first power-off, after every migration: the plan is
    left running. Returns the snapshot before it and the plan's id."""
    ctx = daemon.ctx
    snap, _ = record_snapshot(ctx)
    plan = make_plan(ctx, snap, PlanRequest(spare=0))
    assert plan.draft.power_off
    approve(ctx, plan.id, reason="test")
    run = PlanRun(ctx, plan.id)
    lookup = run.executor.power
    run.executor.power = lambda h: Dies(lookup(h), after_asking=False)
    with pytest.raises(Killed):
        run.run()
    assert load_plan(ctx.engine(), plan.id).status == "running"
    return snap, plan.id


def rolled_back(daemon: Daemon, snapshot_id: str) -> None:
    done = roll_back(daemon.ctx, snapshot_id, partial=False, resume=False, dry_run=False,
                     show=lambda _p: None, confirm=lambda _q: True,
                     run=lambda c, pid, again: PlanRun(c, pid).run(resume=again))
    assert done.outcome is not None and done.outcome.ok, done.outcome


def rows_of(engine: Any, plan_id: str) -> int:
    return len(journal.entries(engine, plan_id=plan_id))


# -- point 5 --------------------------------------------------------------------------------


@pytest.mark.parametrize("auto_apply", ["false", "true"])
def test_the_daemon_does_not_undo_a_rollback(bed: tuple, tmp_path: Path, auto_apply: str,  # noqa: F811
                                             caplog: pytest.LogCaptureFixture) -> None:
    """kill -9 an apply, 'rollback SNAP', then 'daemon --once': the daemon re-ran the killed
    plan's migrations and powered its hosts off."""
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path, auto_apply=auto_apply)
    with time_machine.travel(MORNING, tick=True):     # padding 2: the cycle plans nothing
        snap, killed = crashed_apply(daemon)
        rolled_back(daemon, snap.info.id)
        before_cycle = rows_of(engine, killed)
        with caplog.at_level(logging.INFO, logger=LOGGER):
            result = daemon.cycle()
    assert not result.skipped, result.skipped
    assert rows_of(engine, killed) == before_cycle          # nothing of it ran again
    stored = load_plan(engine, killed)
    assert stored.status == "interrupted" and "rollback" in stored.reason
    assert any(killed in r.getMessage() and "not resumed" in r.getMessage()
               for r in caplog.records)
    if auto_apply == "false":
        assert_as_recorded(cloud, snap.cluster)


def test_without_auto_apply_an_interrupted_plan_is_not_resumed(bed: tuple, tmp_path: Path,  # noqa: F811
                                                               caplog: pytest.LogCaptureFixture
                                                               ) -> None:
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path, auto_apply="false")
    with time_machine.travel(MORNING, tick=True):
        _, killed = crashed_apply(daemon)
        on = powered(cloud)
        with caplog.at_level(logging.INFO, logger=LOGGER):
            daemon.cycle()
    stored = load_plan(engine, killed)
    assert stored.status == "interrupted" and "auto_apply" in stored.reason
    assert powered(cloud) == on
    assert any("auto_apply" in r.getMessage() and killed in r.getMessage()
               for r in caplog.records)


def test_a_newer_plan_overtakes_an_interrupted_one(bed: tuple, tmp_path: Path) -> None:  # noqa: F811
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    with time_machine.travel(MORNING, tick=True):
        snap, killed = crashed_apply(daemon)
        newer = save_plan(engine, load_plan(engine, killed).draft, cloud=snap.info.cloud,
                          snapshot_id=snap.info.id)
        daemon.cycle()
    stored = load_plan(engine, killed)
    assert stored.status == "interrupted" and newer.id in stored.reason


def test_with_auto_apply_and_nothing_newer_the_daemon_finishes_the_plan(bed: tuple,  # noqa: F811
                                                                       tmp_path: Path) -> None:
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    with time_machine.travel(MORNING, tick=True):
        _, killed = crashed_apply(daemon)
        daemon.cycle()
    stored = load_plan(engine, killed)
    assert stored.status == "succeeded", stored.reason
    done = {e.target for e in journal.entries(engine, plan_id=killed)
            if e.action == "power_off" and e.state == journal.SUCCEEDED}
    assert done == set(stored.draft.power_off)


# -- point 11 -------------------------------------------------------------------------------


def test_a_cycle_waits_for_the_capacity_watch_instead_of_vanishing(
        bed: tuple, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    cloud.add_fault({"type": "slow", "seconds": 1.5, "path": "*/os-hypervisors/detail",
                     "count": 1})
    with time_machine.travel(NIGHT, tick=True):
        watch = threading.Thread(target=daemon.capacity_watch)
        watch.start()
        wait_until(daemon.busy.locked, "the capacity watch to start", interval=0.01)
        with caplog.at_level(logging.INFO, logger=LOGGER):
            result = daemon.cycle()
        watch.join(timeout=PATIENCE_S)
    assert not result.skipped, result.skipped
    assert result.plan_id
    assert any("capacity watch" in r.getMessage() and "wait" in r.getMessage()
               for r in caplog.records)


def test_daemon_once_gives_its_lease_back_when_an_executor_holds_the_cloud(
        bed: tuple, tmp_path: Path) -> None:  # noqa: F811
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    assert acquire(engine, "executor:defaults", "elsewhere:1:apply", 60) is not None
    with time_machine.travel(NIGHT, tick=True):
        result = daemon.once()
    assert "holds the executor lease" in result.skipped
    assert current(engine, daemon.lease) is None


def test_daemon_once_gives_its_lease_back_when_the_apply_is_refused(
        bed: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """An apply took the executor lease between the cycle's check and its own apply:
    LeaseHeldError; the daemon lease stayed held until it expired."""
    import consolidator.app.cycle as cycle_module
    import consolidator.daemon as daemon_module

    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    monkeypatch.setattr(daemon_module, "executor_holder", lambda ctx, cloud: None)
    monkeypatch.setattr(cycle_module, "refuse_while_executor_runs", lambda ctx, cloud: None)
    assert acquire(engine, "executor:defaults", "elsewhere:1:apply", 60) is not None
    with time_machine.travel(NIGHT, tick=True):
        result = daemon.once()
    assert "already running" in result.failed
    assert current(engine, daemon.lease) is None
    assert load_plan(engine, result.plan_id).status == "cancelled"
    assert len(powered(cloud)) == 5


def test_the_capacity_watch_logs_no_traceback_while_an_apply_runs(
        bed: tuple, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    with time_machine.travel(NIGHT, tick=True):
        daemon.cycle()
    assert acquire(engine, "executor:defaults", "elsewhere:1:apply", 60) is not None
    with time_machine.travel(MORNING, tick=True), \
            caplog.at_level(logging.DEBUG, logger="consolidator"):
        assert daemon.capacity_watch() == []
    assert not [r for r in caplog.records if r.exc_info]
    assert any("capacity watch" in r.getMessage() and "apply or a rollback" in r.getMessage()
               for r in caplog.records)


def test_a_standby_does_not_warn_at_every_heartbeat(bed: tuple, tmp_path: Path,  # noqa: F811
                                                    caplog: pytest.LogCaptureFixture) -> None:
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    assert acquire(engine, daemon.lease, "other-host:1:active", 60) is not None
    daemon.busy.acquire()    # as during its own (skipped) cycle or capacity watch
    try:
        with caplog.at_level(logging.INFO, logger=LOGGER):
            for _ in range(3):
                daemon.heartbeat()
    finally:
        daemon.busy.release()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_every_skipped_cycle_says_why(bed: tuple, tmp_path: Path,  # noqa: F811
                                      caplog: pytest.LogCaptureFixture) -> None:
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    assert acquire(engine, daemon.lease, "other-host:1:active", 60) is not None
    with caplog.at_level(logging.INFO, logger=LOGGER):
        result = daemon.cycle()
    assert result.skipped == "another daemon holds the lease"
    assert any("cycle skipped" in r.getMessage() and result.skipped in r.getMessage()
               for r in caplog.records)

