"""Issue 45, item 4: with [planner] allow_cold_migration = true, 'hosts drain c1 --power-off'
planned the move of a SHUTOFF instance that the executor then skipped ('not ACTIVE'), leaving
c1 drained and on. The executor moves instances by live migration only, so the planner now
agrees with it: a SHUTOFF instance pins its host, and the option that promised otherwise is
refused in one line when the config is read, before anything is stored."""

from __future__ import annotations

import json
from pathlib import Path

from tests.functional.drain_story import scenario as drain_scenario
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for


def stopped_on_c1() -> dict:
    doc = drain_scenario()
    doc["instances"][0]["status"] = "SHUTOFF"          # a0, on c1
    return doc


def stored(op: Operator, what: str) -> list:
    listed = op(what, "list", "--format", "json")
    assert listed.code == 0, listed.err
    return json.loads(listed.out)


def test_allow_cold_migration_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    with served_cloud(stopped_on_c1(), tmp_path) as served:
        op = operator_for(served, tmp_path)
        op.config.write_text(op.config.read_text() + "allow_cold_migration = true\n")
        drained = op("hosts", "drain", "c1", "--power-off", "--yes")
        assert drained.code == 1, drained.out + drained.err
        lines = drained.err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in drained.err, drained.err
        assert "[planner] allow_cold_migration = true: consolidator moves instances by live " \
               "migration only" in lines[0]
        assert lines[0].endswith("set it to false")
        op.config.write_text(op.config.read_text().replace("allow_cold_migration = true\n",
                                                           ""))
        assert stored(op, "snapshots") == [] and stored(op, "plans") == []


def test_a_stopped_instance_pins_its_host_and_the_drain_says_so(tmp_path: Path) -> None:
    """Without the option the planner and the executor agree: nothing is planned that the
    executor would skip, and the drain is refused naming the stopped instance."""
    with served_cloud(stopped_on_c1(), tmp_path) as served:
        op = operator_for(served, tmp_path)
        drained = op("hosts", "drain", "c1", "--power-off", "--yes")
        assert drained.code == 1, drained.out + drained.err
        assert "a0" in drained.err and "SHUTOFF" in drained.err, drained.err
        assert "the drain is blocked, nothing moves" in drained.err
        assert stored(op, "plans") == []
