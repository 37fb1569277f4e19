"""What apply and rollback print when they end: a headed summary and one closing line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for, scenario


@pytest.fixture
def operator(tmp_path: Path) -> Iterator[Operator]:
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        yield operator_for(served, tmp_path)


def test_apply_and_rollback_end_with_one_line_saying_how_they_ended(operator: Operator) -> None:
    """'plan ID succeeded: 6 migrations, 2 hosts powered off in 1.2 s', and the same for the
    rollback; the summary table has a header over each column."""
    snap = operator("snapshot").out.strip()
    plan = operator.plan()
    applied = operator("apply", plan["id"])
    assert applied.code == 0, applied.err
    lines = applied.out.strip().splitlines()
    moves = len(plan["migrations"])
    assert re.fullmatch(rf"plan {plan['id']} succeeded: {moves} migrations, 2 hosts powered "
                        r"off in [0-9.]+ s", lines[-1]), lines[-1]
    header = next(line for line in lines if "COUNT" in line)
    assert header.split() == ["RESULT", "COUNT"]
    back = operator("rollback", snap, "--yes")
    assert back.code == 0, back.err
    last = back.out.strip().splitlines()[-1]
    assert re.fullmatch(rf"rollback plan [0-9a-f-]+ succeeded: {moves} migrations, 2 hosts powered "
                        r"on in [0-9.]+ s", last), last
