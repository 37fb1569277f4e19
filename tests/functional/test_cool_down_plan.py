"""Issue 25: the power cool-down is given to the planner, as a host without a BMC entry is.

A host powered on less than [power] min_on_time ago, or one beyond the hour's budget of power
actions ([power] max_actions_per_hour), stays on whatever the plan does: emptying it buys
nothing. It was emptied and then left on, its migrations wasted; now it keeps its instances
unless the plan needs it empty.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.snapshots import record_scenario
from consolidator.store.db import make_engine, upgrade

HELD = "emptied, left on: powered on 4 min ago, less than [power] min_on_time (30 min)"


def planned(tmp_path: Path, cool_down: tuple[dict[str, str], int | None]) -> object:
    """The plan firstfit makes of three hosts with one small instance each (it empties c2
    and c3 into c1), under the cool-down given."""
    doc = {"hosts": [{"name": name, "vcpus": 8, "memory_mb": 8192, "disk_gb": 100}
                     for name in ("c1", "c2", "c3")],
           "instances": [{"name": name, "host": host, "vcpus": 2, "memory_mb": 1024,
                          "disk_gb": 10}
                         for name, host in (("a", "c1"), ("b", "c2"), ("c", "c3"))]}
    path = tmp_path / "three.yaml"
    path.write_text(yaml.safe_dump(doc))
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    config = config_from_sections({"planner": {"algorithm": "firstfit",
                                               "n_plus_one": "false"}})
    ctx = AppContext.of(config=config, engine=engine, connect=lambda: None)
    snap = record_scenario(ctx, str(path))
    return make_plan(ctx, snap, PlanRequest(cool_down=cool_down)).draft


def test_a_host_in_its_cool_down_keeps_its_instances(tmp_path: Path) -> None:
    draft = planned(tmp_path, ({"c3": HELD}, None))
    assert draft.power_off == ("c2",)
    assert [(m.instance_name, m.destination) for m in draft.migrations] == [("b", "c1")]
    assert not draft.left_on      # not emptied, so not "emptied, left on"
    assert draft.hosts_after == 2


def test_power_offs_beyond_the_hours_budget_are_not_emptied(tmp_path: Path) -> None:
    draft = planned(tmp_path, ({}, 1))
    assert len(draft.power_off) == 1
    assert [m.source for m in draft.migrations] == list(draft.power_off)
    assert not draft.left_on
    assert any("max_actions_per_hour" in note for note in draft.notes)


def test_no_power_action_left_this_hour_means_no_migration(tmp_path: Path) -> None:
    draft = planned(tmp_path, ({}, 0))
    assert draft.power_off == () and draft.migrations == ()
    assert any("max_actions_per_hour" in note for note in draft.notes)
