"""Candidate plans of one snapshot stay side by side until one is approved, and 'plans
compare' puts them in one table."""

from __future__ import annotations

import json
import re
from pathlib import Path

from consolidator.core.planner import plan_cluster
from consolidator.scenario.files import load_cluster
from consolidator.store.db import make_engine
from consolidator.store.plans import load_plan, save_plan, set_status
from consolidator.store.snapshots import save_snapshot
from tests.functional.cli import run


def test_plans_of_one_snapshot_stay_side_by_side_until_one_is_approved(
        db_url: str, bundled_scenario: Path) -> None:
    engine = make_engine(db_url)
    cluster = load_cluster(bundled_scenario)
    first_snapshot = save_snapshot(engine, cluster, cloud="alto", source="test").info.id
    draft = plan_cluster(cluster, "firstfit")
    older = save_plan(engine, draft, cloud="alto", snapshot_id=first_snapshot).id
    snapshot = save_snapshot(engine, cluster, cloud="alto", source="test").info.id
    one = save_plan(engine, draft, cloud="alto", snapshot_id=snapshot).id
    two = save_plan(engine, plan_cluster(cluster, "zoned-bestfit"), cloud="alto",
                    snapshot_id=snapshot).id
    elsewhere = save_plan(engine, draft, cloud="other", snapshot_id=snapshot).id
    assert load_plan(engine, older).status == "superseded"    # an older snapshot's plan
    assert load_plan(engine, one).status == load_plan(engine, two).status == "proposed"
    set_status(engine, two, "approved")
    assert load_plan(engine, one).status == "superseded"
    assert f"plan {two}" in (load_plan(engine, one).reason or "")
    assert load_plan(engine, elsewhere).status == "proposed"   # other clouds untouched


def test_plans_compare_puts_candidates_in_one_table(tmp_path: Path,
                                                     bundled_scenario: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    first = json.loads(run("plan", "-a", "firstfit", "--scenario", str(bundled_scenario),
                           "--format", "json", db_url=db_url).out)
    second = json.loads(run("plan", "-a", "hvp", "--light", "--snapshot",
                            first["snapshot_id"], "--format", "json", db_url=db_url).out)
    listed = {p["id"]: p["status"] for p in json.loads(
        run("plans", "list", "--format", "json", db_url=db_url).out)}
    assert listed == {first["id"]: "proposed", second["id"]: "proposed"}

    shown = run("plans", "compare", first["id"][:8], second["id"][:8], db_url=db_url)
    assert shown.code == 0, shown.err
    for text in ("HOSTS BEFORE -> AFTER", "MIGRATIONS", "GIB MOVED", "WATTS SAVED"):
        assert text in shown.out, text
    cluster = load_cluster(bundled_scenario)
    memory = {i.id: i.memory_mb for i in cluster.instances}
    for plan in (first, second):
        line = next(ln for ln in shown.out.splitlines() if ln.startswith(plan["id"][:8]))
        assert f"{plan['hosts_before']} -> {plan['hosts_after']}" in line
        gib = sum(memory[m["instance_id"]] for m in plan["migrations"]) / 1024
        numbers = re.findall(r"\d+(?:\.\d+)?", line.split(plan["algorithm"], 1)[1])
        assert str(len(plan["migrations"])) in numbers and f"{gib:.1f}" in numbers
        assert f"{plan['watts_saved']:.0f}" in numbers
    as_json = json.loads(run("plans", "compare", first["id"], second["id"], "--format",
                             "json", db_url=db_url).out)
    assert [p["id"] for p in as_json] == [first["id"], second["id"]]
    assert as_json[0]["migrations"] == len(first["migrations"])

    missing = run("plans", "compare", first["id"], "nope", db_url=db_url)
    assert missing.code != 0 and len(missing.err.strip().splitlines()) == 1


def test_plans_list_shows_what_was_asked_and_the_counts(tmp_path: Path,
                                                        bundled_scenario: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    first = json.loads(run("plan", "-a", "hvp", "--light", "--scenario", str(bundled_scenario),
                           "--format", "json", db_url=db_url).out)
    second = json.loads(run("plan", "-a", "firstfit", "-r", "ucac", "--capacity-model", "ucac",
                            "--confidence", "0.99", "--snapshot", first["snapshot_id"],
                            "--format", "json", db_url=db_url).out)
    listed = run("plans", "list", db_url=db_url)
    assert listed.code == 0, listed.err
    asked = {first["id"]: "hvp --light",
             second["id"]: "firstfit -r ucac --capacity-model ucac --confidence 0.99"}
    for plan in (first, second):
        line = next(ln for ln in listed.out.splitlines() if ln.startswith(plan["id"]))
        assert asked[plan["id"]] in line
        tail = line.rsplit("->", 1)[1].split()   # the hosts column; "asked" may hold an arrow too
        assert tail[:2] == [str(plan["hosts_after"]), str(len(plan["migrations"]))]
    as_json = {p["id"]: p for p in json.loads(
        run("plans", "list", "--format", "json", db_url=db_url).out)}
    # what was asked, then (front35) "-> ALGORITHM" when another algorithm's plan was cheaper
    assert as_json[second["id"]]["asked"].startswith(asked[second["id"]])
    assert as_json[first["id"]]["migrations"] == len(first["migrations"])


def test_a_padding_power_on_plan_supersedes_nothing(db_url: str,
                                                    bundled_scenario: Path) -> None:
    """The daemon's ramp approves its own power-on plan: the operator's candidates stay."""
    from consolidator.app.config import Config
    from consolidator.app.context import AppContext
    from consolidator.app.review import power_on_plan
    from consolidator.openstack.inventory import Inventory

    engine = make_engine(db_url)
    cluster = load_cluster(bundled_scenario)
    snapshot = save_snapshot(engine, cluster, cloud="alto", source="test").info.id
    candidate = save_plan(engine, plan_cluster(cluster, "firstfit"), cloud="alto",
                          snapshot_id=snapshot).id
    ctx = AppContext.of(config=Config(), engine=engine, connect=lambda: None)
    inventory = Inventory(cluster=cluster, capacity_source="placement", microversion=None,
                          cloud="alto")
    power_on_plan(ctx, inventory, [cluster.hosts[0].name], target=1)
    assert load_plan(engine, candidate).status == "proposed"
