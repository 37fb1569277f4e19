"""Plans tell the truth about power, and apply about freshness (issue 27).

Without a BMC file a plan is migrate-only and its dry run succeeds; apply states the
snapshot's age and the drift, refuses a plan whose cloud drifted beyond [executor]
max_drift, and --replan plans again from a fresh snapshot.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.functional.cli import Result, run
from tests.functional.served import ServedCloud, served_cloud
from tests.functional.test_apply_cli import operator_for, scenario
from tests.functional.waits import wait_until


def test_without_a_bmc_file_the_plan_is_migrate_only_and_its_dry_run_succeeds(
        tmp_path: Path) -> None:
    """It said 'power off' and then its dry run failed: 'no BMC is configured for it'."""
    with served_cloud(scenario(bandwidth=1e6), tmp_path, bmc=False) as served:
        config = tmp_path / "c.conf"
        config.write_text("[planner]\nn_plus_one = false\n")
        db = f"sqlite:///{tmp_path / 'c.db'}"
        env = {"OS_CLIENT_CONFIG_FILE": str(served.clouds_yaml), "HOME": str(tmp_path)}

        def op(*args: str) -> Result:
            return run("--config", str(config), "--cloud", served.cloud_name, *args,
                       db_url=db, env=env)

        assert op("db", "upgrade").code == 0
        shown = op("plan", "-a", "firstfit")
        assert shown.code == 0, shown.err
        assert "power off:        nothing (a migrate-only plan: no BMC file)" in shown.out
        assert "left on: migrate-only" in shown.out
        assert "migrate-only plan: no BMC file, so no host is powered off" in shown.out
        plan = json.loads(op("plan", "-a", "firstfit", "--format", "json").out)
        assert plan["power_off"] == [] and plan["left_on"]
        assert all("migrate-only" in why for why in plan["left_on"].values())
        assert plan["migrations"]
        dry = op("apply", plan["id"], "--dry-run")
        assert dry.code == 0, dry.out + dry.err


def migrate(served: ServedCloud, names: list[str], host: str) -> None:
    """Live-migrate servers behind consolidator's back, and wait until they are there."""
    conn = served.connect()
    servers = served.state()["servers"]
    for name in names:
        conn.compute.post(f"/servers/{servers[name]['id']}/action", microversion="2.30",
                          json={"os-migrateLive": {"host": host, "block_migration": "auto"}})
    def there() -> bool:
        where = served.state()["servers"]
        return all(where[n]["host"] == host and where[n]["status"] == "ACTIVE" for n in names)

    wait_until(there, f"{', '.join(names)} to be on {host}")


def test_apply_states_the_age_and_refuses_a_drifted_plan_or_replans(tmp_path: Path) -> None:
    """A plan of a stale snapshot was approved and applied without a word."""
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        op = operator_for(served, tmp_path)
        assert op("snapshot").code == 0
        plan = op.plan()
        fresh = op("apply", plan["id"], "--dry-run")
        assert fresh.code == 0, fresh.out + fresh.err
        assert f"snapshot {plan['snapshot_id']} taken " in fresh.err
        assert "the live cloud differs in 0 of 12 instances (0.0 %" in fresh.err

        migrate(served, ["vm-3-0", "vm-4-0"], "c2")   # 2 of 12: 16.7 % > 10 %
        before = served.state()["servers"]
        refused = op("apply", plan["id"], "--yes")
        assert refused.code == 1
        assert refused.err.strip().splitlines()[-1].startswith(
            f"consolidator: error: the live cloud has drifted 16.7 % from plan {plan['id']}'s "
            f"snapshot (more than [executor] max_drift = 10 %)")
        assert "2 moved, 0 gone, 0 new" in refused.err
        assert served.state()["servers"] == before   # nothing was run

        replanned = op("apply", plan["id"], "--yes", "--replan")
        assert replanned.code == 0, replanned.out + replanned.err
        assert "replanned as " in replanned.err
        listed = json.loads(op("plans", "list", "--format", "json").out)
        statuses = {p["id"]: p["status"] for p in listed}
        assert statuses[plan["id"]] == "cancelled"
        assert sorted(statuses.values()) == ["cancelled", "succeeded"]


def test_replan_keeps_the_plans_algorithm_options_and_budget(tmp_path: Path) -> None:
    """apply --replan planned again with the default budget and options: a plan made with
    '-a firstfit --max-migrations 3' came back as an unbudgeted 'auto' plan."""
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        op = operator_for(served, tmp_path)
        made = op("plan", "-a", "firstfit", "--max-migrations", "3", "--scope", "host=c*",
                  "--format", "json")
        assert made.code == 0, made.err
        plan = json.loads(made.out)
        assert len(plan["migrations"]) <= 3
        assert op("plan", "approve", plan["id"]).code == 0
        migrate(served, ["vm-3-0", "vm-4-0"], "c2")   # beyond max_drift: a re-plan

        replanned = op("apply", plan["id"], "--yes", "--replan")
        assert replanned.code == 0, replanned.out + replanned.err
        listed = json.loads(op("plans", "list", "--format", "json").out)
        fresh_id = next(p["id"] for p in listed if p["id"] != plan["id"])
        fresh = json.loads(op("plan", "show", fresh_id, "--format", "json").out)
        assert fresh["status"] == "succeeded"
        assert fresh["algorithm"] == "firstfit"
        assert fresh["choice"]["asked"] == "firstfit"
        assert fresh["choice"]["budget"]["max_migrations"] == 3
        assert len(fresh["migrations"]) <= 3
        assert fresh["options"].get("scope") == "host=c*"
        asked = next(p["asked"] for p in listed if p["id"] == fresh_id)
        assert asked == next(p["asked"] for p in listed if p["id"] == plan["id"])
