"""plan --front, the budget options and -a auto, through the real command."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from consolidator.emulators.fake.generate import generate
from tests.functional.cli import run
from tests.unit.test_front import MIXED


def scenario_file(tmp_path: Path) -> Path:
    """A generated mixed-host scenario of 40 hosts."""
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(generate(40, per_host=9.2, seed=3, fill=0.6,
                                            models=MIXED)))
    return path


def test_a_budget_is_kept_and_the_choice_is_stored(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    scenario = str(scenario_file(tmp_path))
    free = json.loads(run("plan", "--scenario", scenario, "--format", "json",
                          db_url=db_url).out)
    assert free["choice"]["asked"] == "auto"                 # auto is the default
    most = len(free["migrations"]) // 2
    made = run("plan", "--scenario", scenario, "--max-migrations", str(most), "--format",
               "json", db_url=db_url)
    assert made.code == 0, made.err
    plan = json.loads(made.out)
    assert 0 < len(plan["migrations"]) <= most
    assert plan["hosts_after"] < plan["hosts_before"]
    shown = json.loads(run("plan", "show", plan["id"], "--format", "json",
                           db_url=db_url).out)
    assert shown["choice"] == plan["choice"]
    assert shown["choice"]["budget"]["max_migrations"] == most
    text = run("plan", "show", plan["id"], db_url=db_url).out
    assert f"within at most {most} migrations" in text


def test_the_config_budget_applies_when_no_option_is_given(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    config = tmp_path / "c.conf"
    config.write_text("[planner]\nmax_migrations = 20\n")
    made = run("--config", str(config), "plan", "--scenario", str(scenario_file(tmp_path)),
               "--format", "json", db_url=db_url)
    assert made.code == 0, made.err
    assert len(json.loads(made.out)["migrations"]) <= 20


def test_the_front_as_json_table_and_chart(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    scenario = str(scenario_file(tmp_path))
    data = json.loads(run("plan", "--scenario", scenario, "--front", "--format", "json",
                          db_url=db_url).out)["front"]
    # one front, each point under the algorithm or search that made it
    assert "fewest-migrations" in data
    assert set(data) <= {"zoned-bestfit", "firstfit", "hvp", "fewest-migrations",
                         "budget-search"}
    costs = [(p["hosts_after"], p["migrations"]) for points in data.values() for p in points]
    assert len(costs) > 5
    for a in costs:          # none leaves as many hosts on for as many migrations or more
        assert not any(b != a and b[0] <= a[0] and b[1] <= a[1] for b in costs)
    text = run("plan", "--scenario", scenario, "--front", db_url=db_url).out
    assert "GIB MOVED" in text and "hosts left on (up) against migrations" in text
    listed = run("plans", "list", "--format", "json", db_url=db_url)
    assert listed.code == 0 and json.loads(listed.out) == []     # --front stores no plan


def test_a_budget_with_the_energy_objective_is_a_usage_error(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    made = run("plan", "--scenario", str(scenario_file(tmp_path)), "--objective", "energy",
               "--max-migrations", "5", db_url=db_url)
    assert made.code == 2
    assert "work with --objective hosts" in made.err and "Traceback" not in made.err


def test_options_that_mean_nothing_with_the_front_are_usage_errors(tmp_path: Path) -> None:
    """--front stores no plan and picks no point: a budget, --format id, --check-live or the
    energy objective given with it would be silently ignored, so each is refused."""
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    scenario = str(scenario_file(tmp_path))
    for extra, named in ((["--max-migrations", "10"], "--max-migrations"),
                         (["--max-moved-gib", "50"], "--max-moved-gib"),
                         (["--target-hosts", "5"], "--target-hosts"),
                         (["--format", "id"], "--format id"),
                         (["--check-live"], "--check-live"),
                         (["--objective", "energy"], "--objective energy")):
        made = run("plan", "--scenario", scenario, "--front", *extra, db_url=db_url)
        assert made.code == 2, (extra, made.out)
        assert named in made.err and "--front" in made.err, made.err
        assert "Traceback" not in made.err and made.out == ""


def test_a_budget_that_is_not_a_number_is_a_usage_error(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    made = run("plan", "--scenario", str(scenario_file(tmp_path)), "--max-moved-gib", "nan",
               db_url=db_url)
    assert made.code == 2, made.out + made.err
    assert "--max-moved-gib" in made.err and "unexpected error" not in made.err


def test_plans_list_and_compare_show_the_budget_and_auto_that_were_asked(
        tmp_path: Path) -> None:
    """The ASKED column is the command-line words that ask for the plan: a budgeted auto
    plan reads 'auto --max-migrations N', not only the algorithm that won."""
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    scenario = str(scenario_file(tmp_path))
    made = json.loads(run("plan", "--scenario", scenario, "--max-migrations", "20",
                          "--max-moved-gib", "64.5", "--format", "json", db_url=db_url).out)
    won = made["choice"]["algorithm"]
    listed = json.loads(run("plans", "list", "--format", "json", db_url=db_url).out)
    asked = listed[0]["asked"]
    assert asked.startswith("auto --max-migrations 20 --max-moved-gib 64.5"), asked
    assert won in asked
    compared = run("plans", "compare", made["id"], db_url=db_url)
    assert compared.code == 0 and "auto --max-migrations 20 --max-moved-gib 64.5" in compared.out


def test_the_energy_objective_without_any_reading_says_so(tmp_path: Path) -> None:
    """A scenario has no BMC readings: every host counts at [energy] idle_watts, so the energy
    objective cannot tell the generations apart; the plan must say that, not claim it kept
    the hosts that draw least."""
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    made = run("plan", "--scenario", str(scenario_file(tmp_path)), "--objective", "energy",
               "--format", "json", db_url=db_url)
    assert made.code == 0, made.err
    plan = json.loads(made.out)
    assert plan["energy"]["measured"] == []
    notes = [n for n in plan["notes"] if "no host has a power reading" in n]
    assert notes and "270 W" in notes[0], plan["notes"]


def test_a_configured_budget_is_never_ignored_silently_by_the_energy_objective(
        tmp_path: Path) -> None:
    """[planner] max_migrations beside [planner] objective = energy is refused when the config
    is loaded (the daemon would exceed it every hour); beside --objective energy on the
    command line, the plan says the budget does not apply."""
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    scenario = str(scenario_file(tmp_path))
    both = tmp_path / "both.conf"
    both.write_text("[planner]\nobjective = energy\nmax_migrations = 30\n")
    made = run("--config", str(both), "plan", "--scenario", scenario, db_url=db_url)
    assert made.code != 0 and made.out == ""
    assert "max_migrations = 30" in made.err and "objective = energy" in made.err, made.err
    assert "Traceback" not in made.err
    budget = tmp_path / "budget.conf"
    budget.write_text("[planner]\nmax_migrations = 30\n")
    made = run("--config", str(budget), "plan", "--scenario", scenario, "--objective",
               "energy", "--format", "json", db_url=db_url)
    assert made.code == 0, made.err
    plan = json.loads(made.out)
    assert len(plan["migrations"]) > 30             # the energy plan needs more than that
    assert any("max_migrations = 30 does not apply" in n for n in plan["notes"]), plan["notes"]


def test_the_front_names_the_snapshot_its_points_can_be_planned_from(tmp_path: Path) -> None:
    """--front stores no plan, but it reads (and, from a scenario or the live cloud, records)
    a snapshot: it names it, so that a point is planned from the same state."""
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    scenario = str(scenario_file(tmp_path))
    data = json.loads(run("plan", "--scenario", scenario, "--front", "--format", "json",
                          db_url=db_url).out)
    snapshots = json.loads(run("snapshots", "list", "--format", "json", db_url=db_url).out)
    assert data["snapshot"] == snapshots[0]["id"]
    text = run("plan", "--snapshot", data["snapshot"], "--front", db_url=db_url).out
    assert f"consolidator plan --snapshot {data['snapshot']} --max-migrations N" in text


def test_zero_hosts_left_on_is_not_a_target(tmp_path: Path) -> None:
    """--target-hosts 0 cannot be reached while any instance runs: a usage error, not a plan
    whose 'chosen:' line claims it kept within '0 hosts left on'."""
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    made = run("plan", "--scenario", str(scenario_file(tmp_path)), "--target-hosts", "0",
               db_url=db_url)
    assert made.code == 2 and "--target-hosts" in made.err, made.out + made.err
    assert json.loads(run("plans", "list", "--format", "json", db_url=db_url).out) == []


def test_auto_and_fewest_migrations_are_named_where_algorithms_are_listed(
        tmp_path: Path) -> None:
    """auto is plan's default and fewest-migrations is what a budgeted plan may read: both
    are explained by 'consolidator algorithms', and an unknown -a lists auto too."""
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    listing = run("algorithms").out
    assert "\nauto " in listing and "\nfewest-migrations " in listing, listing
    bad = run("plan", "-a", "nope", "--scenario", str(scenario_file(tmp_path)), db_url=db_url)
    assert bad.code == 2 and "choose one of auto, exact, firstfit" in bad.err, bad.err
