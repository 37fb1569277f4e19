"""Plans through the CLI and the store, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from consolidator.core.plan import PlanStateError
from consolidator.core.planner import plan_cluster
from consolidator.scenario.files import load_cluster
from consolidator.store.db import make_engine
from consolidator.store.plans import load_plan, save_plan, set_status
from consolidator.store.snapshots import save_snapshot
from tests.functional.cli import run

CONTRACT_KEYS = {"id", "snapshot_id", "algorithm", "ranking", "status", "migrations",
                 "power_off", "hosts_before", "hosts_after", "lower_bound"}


def test_plan_store_round_trip_and_states(db_url: str, bundled_scenario: Path) -> None:
    engine = make_engine(db_url)
    cluster = load_cluster(bundled_scenario)
    snapshot_id = save_snapshot(engine, cluster, cloud="alto", source="test").info.id
    draft = plan_cluster(cluster, "zoned-bestfit", spare=1)
    first = save_plan(engine, draft, cloud="alto", snapshot_id=snapshot_id).id
    stored = load_plan(engine, first[:8])
    assert stored.draft == draft and stored.status == "proposed"
    newer = save_snapshot(engine, cluster, cloud="alto", source="test").info.id
    second = save_plan(engine, draft, cloud="alto", snapshot_id=newer).id
    assert load_plan(engine, first).status == "superseded"   # made from an older snapshot
    other = save_plan(engine, draft, cloud="elsewhere", snapshot_id=snapshot_id).id
    assert load_plan(engine, second).status == "proposed"   # other clouds are not touched
    set_status(engine, second, "approved")
    with pytest.raises(PlanStateError, match="is approved: it cannot become proposed"):
        set_status(engine, second, "proposed")
    set_status(engine, other, "cancelled")
    with pytest.raises(PlanStateError):
        set_status(engine, other, "approved")


def test_plan_command_review_approve_cancel(tmp_path: Path, bundled_scenario: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    made = run("plan", "--algorithm", "zoned-bestfit", "--scenario", str(bundled_scenario),
               "--spare", "1", "--format", "json", db_url=db_url)
    assert made.code == 0, made.err
    plan = json.loads(made.out)
    assert plan.keys() >= CONTRACT_KEYS
    assert plan["status"] == "proposed" and plan["algorithm"] == "zoned-bestfit"
    assert max(Counter(m["instance_id"] for m in plan["migrations"]).values()) == 1
    assert plan["hosts_after"] == plan["hosts_before"] - len(plan["power_off"])
    assert plan["lower_bound"] <= plan["hosts_after"]
    assert len(plan["spare_hosts"]) == 1
    # Every host powered off holds nothing once the migrations are done.
    cluster = load_cluster(bundled_scenario)
    where = {i.id: i.host for i in cluster.instances}
    where.update({m["instance_id"]: m["destination"] for m in plan["migrations"]})
    assert not set(plan["power_off"]) & set(where.values())

    table = run("plan", "show", plan["id"][:8], db_url=db_url)
    assert table.code == 0
    for text in ("VCPU USED (BEFORE -> AFTER)", "wave 1:", "power off", "lower bound",
                 "estimated saving", "kWh", "approve with"):
        assert text in table.out, text
    shown = json.loads(run("plan", "show", plan["id"], "--format", "json", db_url=db_url).out)
    assert shown == plan

    again = json.loads(run("plan", "-a", "firstfit", "--snapshot", plan["snapshot_id"],
                           "--format", "json", db_url=db_url).out)
    listed = json.loads(run("plans", "list", "--format", "json", db_url=db_url).out)
    assert {p["id"]: p["status"] for p in listed} == {again["id"]: "proposed",
                                                      plan["id"]: "proposed"}
    approved = run("plan", "approve", again["id"], db_url=db_url)
    # a plan made from a scenario file: approved for the review, never pointed at 'apply'
    assert approved.code == 0 and "can be reviewed, not applied" in approved.out
    assert "consolidator apply" not in approved.out
    assert json.loads(run("plan", "show", plan["id"], "--format", "json",
                          db_url=db_url).out)["status"] == "superseded"
    assert run("plan", "cancel", again["id"], db_url=db_url).code == 0
    refused = run("plan", "approve", again["id"], db_url=db_url)
    assert refused.code == 2 and "was cancelled: it cannot become approved" in refused.err
    assert len(refused.err.strip().splitlines()) == 1


def test_plan_usage_errors(tmp_path: Path, bundled_scenario: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    bad = run("plan", "--algorithm", "nope", "--scenario", str(bundled_scenario), db_url=db_url)
    assert bad.code == 2 and "unknown algorithm 'nope': choose one of" in bad.err
    assert "firstfit" in bad.err and "zoned-bestfit" in bad.err
    bad_rank = run("plan", "-r", "nope", "--scenario", str(bundled_scenario), db_url=db_url)
    assert bad_rank.code == 2 and "choose one of" in bad_rank.err and "xbalance" in bad_rank.err
    missing = run("plan", "show", "feedbeef", db_url=db_url)
    assert missing.code == 2 and "plan 'feedbeef' does not exist" in missing.err
    listing = run("algorithms")
    assert listing.code == 0 and "004" in listing.out and "RANKING" in listing.out
