"""The front's terminal chart: its axis labels name the rows their points are drawn on."""

from __future__ import annotations

from pathlib import Path

from consolidator.core.front import FEWEST, FRONT_ALGORITHMS, FrontBuilder
from consolidator.core.front_budgets import front
from consolidator.core.planner import PlanSettings
from consolidator.render.front import front_chart
from consolidator.scenario.files import load_scenario

ALTO = Path(__file__).parents[2] / "etc" / "consolidator" / "scenarios" / "alto-cloud.yaml"


def test_each_host_count_label_sits_on_the_row_of_its_points() -> None:
    cluster = load_scenario(str(ALTO)).cluster
    points = front(FrontBuilder(cluster, PlanSettings()), (*FRONT_ALGORITHMS, FEWEST))
    counts = {p.hosts_after for ps in points.values() for p in ps}
    rows = front_chart(points).splitlines()
    labelled = {int(line.split("|")[0]): line.split("|", 1)[1] for line in rows
                if "|" in line and line.split("|")[0].strip()}
    assert len(labelled) >= 3                      # top, middle and bottom
    assert set(labelled) <= set(range(min(counts), max(counts) + 1))
    for value, cells in labelled.items():
        # a labelled row holds marks exactly when some point leaves that many hosts on
        assert bool(cells.strip()) == (value in counts), (value, front_chart(points))
