"""The drain story of tests/functional/drain_story.py on the real Nova and Placement."""

from __future__ import annotations

from pathlib import Path

from tests.functional.drain_story import scenario, tell
from tests.realnova.operator import operator_for
from tests.realnova.served import served_nova


def test_drain_blocked_drain_and_undrain(tmp_path: Path) -> None:
    with served_nova(scenario(), tmp_path) as served:
        tell(operator_for(served, tmp_path))
