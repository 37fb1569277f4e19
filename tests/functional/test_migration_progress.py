"""Polling a live migration with backoff, and its progress from Nova's migration record
(issue 15, "apply speed on the fake cloud")."""

from __future__ import annotations

import dataclasses

import pytest

import consolidator.execution.migration_step as migration_step_module
from consolidator.execution.progress import DONE, RUNNING, STARTED, MigrationProgress
from tests.functional.test_executor import Bed, bed  # noqa: F401 - the fixture


def test_polls_back_off_and_progress_carries_novas_memory_counters(
        bed: Bed, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    plan = bed.plan()
    slow = next(m for m in plan.draft.migrations if m.source == "c4")
    bed.cloud.add_fault({"type": "migration_slow", "instance": slow.instance_name,
                         "seconds": 1.5})
    waits: dict[int, list[float]] = {}
    real = migration_step_module.poll_delays

    def recorded(first: float, cap: float):  # noqa: ANN202 - a generator of floats
        mine = waits.setdefault(len(waits), [])
        for delay in real(first, cap):
            mine.append(delay)
            yield delay

    monkeypatch.setattr(migration_step_module, "poll_delays", recorded)
    run = bed.executor()
    run.settings = dataclasses.replace(run.settings, poll_first=0.05, poll_interval=0.4)
    events: list[MigrationProgress] = []
    run.progress = events.append
    outcome = run.run(plan)
    assert outcome.ok, outcome
    # Every poll loop starts at the short first wait and doubles up to the cap.
    assert waits
    for delays in waits.values():
        assert delays[0] == 0.05
        for before, after in zip(delays, delays[1:], strict=False):
            assert after == min(before * 2, 0.4)
    assert max(len(d) for d in waits.values()) >= 5      # the slow move reached the cap
    mine = [e for e in events if e.instance == slow.instance_name]
    assert mine[0].phase == STARTED and mine[-1].phase == DONE
    running = [e for e in mine if e.phase == RUNNING]
    total = 4096 * 1024 * 1024
    assert running and all(e.memory_total_bytes == total for e in running)
    copied = [e.memory_processed_bytes for e in running]
    assert copied == sorted(copied)                       # it only advances
    assert len({c for c in copied if 0 < c < total}) >= 2  # seen part-way, more than once
    for event in running:
        assert event.memory_processed_bytes + event.memory_remaining_bytes == total
    bed.assert_safe()


def test_no_progress_is_read_without_a_listener(bed: Bed) -> None:  # noqa: F811
    """The counters cost a request per poll: only a run with a listener reads them."""
    plan = bed.plan()
    run = bed.executor()
    calls: list[str] = []
    original = run.nova.migration_progress
    run.nova.migration_progress = lambda sid: calls.append(sid) or original(sid)
    assert run.run(plan).ok
    assert calls == []
