"""The operator's workflow (issue 15): lifecycle, scenario plans, the daemon beside an apply,
and one-line errors at the door, each as an operator meets it."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from consolidator.store.db import make_engine
from consolidator.store.leases import acquire
from consolidator.store.plans import set_status
from tests.functional.cli import run
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import operator_for, scenario

ALTO = Path(__file__).resolve().parents[2] / "consolidator" / "data" / "alto-cloud.yaml"


def test_a_running_plan_cannot_be_cancelled(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    plan = json.loads(run("plan", "--scenario", str(ALTO), "-a", "firstfit", "--format",
                          "json", db_url=db_url).out)
    engine = make_engine(db_url)
    set_status(engine, plan["id"], "approved")
    set_status(engine, plan["id"], "running")
    cancelled = run("plan", "cancel", plan["id"], db_url=db_url)
    assert cancelled.code == 2          # the plan's state does not allow it: a usage error
    assert "is running: it cannot become cancelled" in cancelled.err
    assert f"apply --resume {plan['id']}" in cancelled.err


def test_a_scenario_plan_is_filed_apart_and_never_applied(tmp_path: Path) -> None:
    """Defect 3: a plan made from --scenario was filed under the live cloud's name,
    superseded its proposed plan, and 'apply --yes' ran it against the live cloud."""
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    made = run("--cloud", "production", "plan", "--scenario", str(ALTO), "-a", "firstfit",
               "--format", "json", db_url=db_url)
    assert made.code == 0, made.err
    plan = json.loads(made.out)
    assert plan["cloud"] == "scenario:alto"
    applied = run("--cloud", "production", "apply", plan["id"], "--yes", db_url=db_url)
    assert applied.code == 2
    assert "was made from a scenario file (scenario:alto)" in applied.err
    shown = json.loads(run("plan", "show", plan["id"], "--format", "json", db_url=db_url).out)
    assert shown["status"] == "proposed"
    # Approving it (a review step) said "run it with: consolidator apply ID", which refuses.
    approved = run("plan", "approve", plan["id"], db_url=db_url)
    assert approved.code == 0, approved.err
    assert "was made from a scenario file (scenario:alto)" in approved.out
    assert "can be reviewed, not applied" in approved.out
    assert "consolidator apply" not in approved.out


def test_a_rollback_refused_by_the_lease_leaves_no_approved_plan(tmp_path: Path) -> None:
    """Defect 5: the executor lease refused the rollback, and its plan stayed approved.
    Issue 23, point 12: the lease is checked first, so no plan is stored at all."""
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        op = operator_for(served, tmp_path)
        doc = scenario(bandwidth=1e6)
        doc["instances"][0]["host"] = "c2"           # where the rollback would move it back
        old = tmp_path / "old.yaml"
        old.write_text(yaml.safe_dump(doc))
        snap = op("snapshot", "--scenario", str(old)).out.strip()
        assert acquire(make_engine(op.db_url), "executor:fake", "someone-else:1:x", 300)
        refused = op("rollback", snap, "--yes")
        assert refused.code == 1 and "holds lease" in refused.err
        plans = json.loads(op("plans", "list", "--format", "json").out)
        assert not [p for p in plans if p["algorithm"] == "rollback"]
        assert refused.out == ""                    # refused before the plan is printed


def test_report_for_a_cloud_without_snapshots_is_an_error(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    assert run("snapshot", "--scenario", str(ALTO), db_url=db_url).code == 0
    result = run("report", "--cloud", "nope", db_url=db_url)
    assert result.code == 2
    assert "no snapshots of cloud 'nope': the clouds with snapshots are scenario:alto" \
        in result.err


def test_a_sqlite_path_in_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    result = run("db", "upgrade", db_url=f"sqlite:///{missing / 'c.db'}")
    assert result.code == 2 and "does not exist" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not missing.exists()


def test_the_daemon_skips_its_cycle_while_an_apply_runs(tmp_path: Path) -> None:
    """Defect 6: 'daemon --once' planned from a half-migrated cloud while an apply ran."""
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        op = operator_for(served, tmp_path)
        assert acquire(make_engine(op.db_url), "executor:fake", "an-apply:1:x", 300)
        once = op("daemon", "--once")
        assert once.code == 0, once.err
        assert "cycle skipped: an apply or a rollback is running" in once.out
        plans = json.loads(op("plans", "list", "--format", "json").out)
        assert plans == []


def test_plan_and_apply_agree_on_a_host_without_a_bmc(tmp_path: Path) -> None:
    """Issue 17, defect 2: the plan listed 'power off: c3' for a host the BMC file does not
    list, and apply made every migration, then exited 1 with 'no BMC is configured'."""
    doc = scenario(bandwidth=1e6)
    del doc["hosts"][2]["bmc"]                       # c3 has no BMC
    with served_cloud(doc, tmp_path) as served:
        op = operator_for(served, tmp_path)
        plan = json.loads(op("plan", "-a", "firstfit", "--format", "json").out)
        assert plan["power_off"] == ["c4"]
        # issue 27: a host that stays on anyway is not emptied for nothing
        assert plan["left_on"] == {}
        assert "c3" not in {m["source"] for m in plan["migrations"]}
        assert any("not emptied, as it stays on anyway" in n and "c3" in n
                   for n in plan["notes"])
        applied = op("apply", plan["id"], "--yes")
        assert applied.code == 0, applied.out + applied.err
        state = served.state()["hosts"]
        assert state["c3"]["power"] == "on" and state["c3"]["status"] == "enabled"
        assert state["c3"]["servers"] == 3
        assert state["c4"]["power"] == "off"
