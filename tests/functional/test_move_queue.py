"""The executor's move queue on the fake cloud: a slow move of one wave delays only the moves
of later waves that depend on it; a failed one holds them back (issue 14, "migrations under
control")."""

from __future__ import annotations

import dataclasses

from consolidator.core.journal_entry import Entry
from consolidator.core.plan import Move, StoredPlan
from consolidator.store import journal
from tests.functional.test_executor import Bed, bed  # noqa: F401 - the fixture


def four_moves(bed: Bed) -> tuple[StoredPlan, dict[str, Move]]:  # noqa: F811
    """Wave 1: A c3->c1 (made slow), B c4->c2. Wave 2: C c5->c2 shares no host with A (it
    waits for B only); D c3->c1 leaves A's source for A's destination, so it waits for A."""
    plan = bed.plan()
    ids = {i.name: i.id for i in bed.cloud.cluster().instances}
    spec = {"A": ("vm-3-0", "c3", "c1", 1), "B": ("vm-4-0", "c4", "c2", 1),
            "C": ("vm-5-0", "c5", "c2", 2), "D": ("vm-3-1", "c3", "c1", 2)}
    moves = {k: Move(ids[n], n, s, d, w) for k, (n, s, d, w) in spec.items()}
    draft = dataclasses.replace(plan.draft, migrations=tuple(moves.values()), power_off=())
    return dataclasses.replace(plan, draft=draft), moves


def spans(bed: Bed, plan: StoredPlan) -> dict[str, Entry]:  # noqa: F811
    return {e.params["instance"]: e for e in journal.entries(bed.engine, plan_id=plan.id)
            if e.action == "migrate"}


def test_a_slow_move_delays_only_the_moves_that_depend_on_it(bed: Bed) -> None:  # noqa: F811
    plan, moves = four_moves(bed)
    bed.cloud.add_fault({"type": "migration_slow", "instance": "vm-3-0", "seconds": 1.5})
    outcome = bed.run(plan)
    assert outcome.ok, outcome
    rows = spans(bed, plan)
    slow, independent, dependent = rows["vm-3-0"], rows["vm-5-0"], rows["vm-3-1"]
    # The independent wave-2 move started (and ended) while the slow wave-1 move still ran.
    assert independent.started_at < slow.finished_at
    assert independent.finished_at < slow.finished_at
    # It still waited for the wave-1 move into its own destination.
    assert independent.started_at >= rows["vm-4-0"].finished_at
    # The dependent one waited for the slow move.
    assert dependent.started_at >= slow.finished_at
    for move in moves.values():
        assert bed.cloud.server_host(move.instance_id) == move.destination
    bed.assert_safe()


def test_a_failed_move_holds_back_the_moves_that_depend_on_it(bed: Bed) -> None:  # noqa: F811
    plan, moves = four_moves(bed)
    bed.cloud.add_fault({"type": "migration_fails", "instance": "vm-3-0"})
    outcome = bed.run(plan)
    assert "vm-3-0" in outcome.failed
    assert "held back" in outcome.skipped["vm-3-1"] and "vm-3-0" in outcome.skipped["vm-3-1"]
    assert sorted(m.instance_name for m in outcome.migrated) == ["vm-4-0", "vm-5-0"]
    assert bed.cloud.server_host(moves["D"].instance_id) == "c3"
    rows = spans(bed, plan)
    assert rows["vm-3-1"].state == journal.SKIPPED and "held back" in rows["vm-3-1"].result
    bed.assert_safe()
