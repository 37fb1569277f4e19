"""A newcomer's walk (issue 45): each command that ended in an unexpected error, stored
something before refusing, exited with the wrong code or said something untrue now refuses in
one line naming the fix, with README's exit code, and stores nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.functional.cli import Result, run

NOT_UTF8 = b"\xff\xfename,mips,ram_mb,cpu1\n"


def one_line(result: Result) -> str:
    """The last line on stderr (a refusal is one line; no traceback)."""
    assert "Traceback" not in result.err and "unexpected error" not in result.err, result.err
    return result.err.strip().splitlines()[-1]


def stored(db_url: str, what: str) -> list:
    listed = run(what, "list", "--format", "json", db_url=db_url)
    assert listed.code == 0, listed.err
    return json.loads(listed.out)


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=url).code == 0
    return url


@pytest.mark.parametrize("option, named", [
    ("weights=a,b", "option weights=a,b: not 3 numbers"),
    ("weights=1,2", "option weights=1,2: not 3 numbers"),
])
def test_bad_ranking_weights_are_refused_before_storing(db: str, bundled_scenario: Path,
                                                        option: str, named: str) -> None:
    """'-r xbalance -o weights=a,b' ended in 'unexpected error: ValueError'."""
    made = run("plan", "--scenario", str(bundled_scenario), "-r", "xbalance", "-o", option,
               db_url=db)
    assert made.code == 2, made.err
    assert named in one_line(made)
    assert stored(db, "snapshots") == [] and stored(db, "plans") == []


@pytest.mark.parametrize("algorithm", [None, "importance-3d"])
def test_a_bad_bin_is_refused_for_every_algorithm_before_storing(
        db: str, bundled_scenario: Path, algorithm: str | None) -> None:
    """'-o bin=axb' with the default algorithm stored a plan and exited 0; with -a
    importance-3d it stored a snapshot, then refused."""
    chosen = ("-a", algorithm) if algorithm else ()
    made = run("plan", "--scenario", str(bundled_scenario), *chosen, "-o", "bin=axb",
               db_url=db)
    assert made.code == 2, made.err
    line = one_line(made)
    if algorithm:
        assert "option bin=axb: not three positive integers (expected bin=WxHxD)" in line
    else:   # auto runs the fast algorithms, none of which has a bin
        assert "unknown option 'bin' for auto" in line
    assert stored(db, "snapshots") == [] and stored(db, "plans") == []


def test_check_live_of_a_scenario_refuses_before_storing(db: str,
                                                         bundled_scenario: Path) -> None:
    """'plan --check-live' stored the plan (and, with --scenario, a snapshot), then failed
    on the cloud 'scenario:alto'."""
    made = run("plan", "--scenario", str(bundled_scenario), "--check-live", db_url=db)
    assert made.code == 2, made.err
    assert "--check-live asks the live cloud's Placement, and a scenario file has none" \
        in one_line(made)
    assert stored(db, "snapshots") == [] and stored(db, "plans") == []
    snap = run("snapshot", "--scenario", str(bundled_scenario), db_url=db).out.strip()
    made = run("plan", "--snapshot", snap, "--check-live", db_url=db)
    assert made.code == 2, made.err
    assert f"snapshot {snap} (scenario:alto) has none" in one_line(made)
    assert stored(db, "plans") == []


def test_a_scenario_without_hosts_is_refused_before_storing(db: str, tmp_path: Path) -> None:
    """'hosts: []' stored a snapshot and a '0 -> 0' plan."""
    empty = tmp_path / "empty.yaml"
    empty.write_text("hosts: []\ninstances: []\n")
    for args in (("plan", "--scenario", str(empty)), ("snapshot", "--scenario", str(empty))):
        made = run(*args, db_url=db)
        assert made.code == 1, made.err
        assert one_line(made) == (f"consolidator: error: {empty}: hosts: the list is empty: "
                                  f"a scenario needs at least one compute host")
    assert stored(db, "snapshots") == [] and stored(db, "plans") == []


@pytest.mark.parametrize("option, name", [("--trace", "t.csv"), ("--trace", "t.json"),
                                          ("--hosts-file", "h.yaml")])
def test_a_trace_or_host_file_that_is_not_utf8_is_one_line(tmp_path: Path, db: str,
                                                           option: str, name: str) -> None:
    """It ended in 'unexpected error: UnicodeDecodeError'."""
    path = tmp_path / name
    path.write_bytes(NOT_UTF8)
    result = run("simulate", "trace", option, str(path), "--hosts", "4", db_url=db)
    assert result.code == 1, result.err
    assert one_line(result) == (f"consolidator: error: {path}: not UTF-8 text (byte 0xff at "
                                f"offset 0): save it as UTF-8")


def test_a_planetlab_folder_with_a_file_that_is_not_utf8_is_one_line(tmp_path: Path,
                                                                     db: str) -> None:
    folder = tmp_path / "day"
    folder.mkdir()
    (folder / "vm1").write_text("10\n20\n")
    (folder / "vm2").write_bytes(b"\xff\xfe10\n")
    result = run("simulate", "trace", "--planetlab", str(folder), db_url=db)
    assert result.code == 1, result.err
    assert one_line(result) == (f"consolidator: error: {folder / 'vm2'}: not UTF-8 text "
                                f"(byte 0xff at offset 0): save it as UTF-8")


def test_an_importance_file_that_is_not_utf8_is_one_line(tmp_path: Path, db: str,
                                                         bundled_scenario: Path) -> None:
    listed = tmp_path / "important.txt"
    listed.write_bytes(b"vm-0001\n\xe9t\xe9\n")
    config = tmp_path / "c.conf"
    config.write_text(f"[planner]\nimportance_file = {listed}\n")
    made = run("--config", str(config), "plan", "--scenario", str(bundled_scenario),
               db_url=db)
    assert made.code == 1, made.err
    assert one_line(made) == (f"consolidator: error: {listed}: not UTF-8 text (byte 0xe9 at "
                              f"offset 8): save it as UTF-8")


def without_psycopg(tmp_path: Path) -> dict[str, str]:
    """An environment where 'import psycopg' fails, as in a plain install."""
    shadow = tmp_path / "no-psycopg"
    (shadow / "psycopg").mkdir(parents=True)
    (shadow / "psycopg" / "__init__.py").write_text(
        "raise ImportError('psycopg is not installed (simulated)')\n")
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": f"{shadow}{os.pathsep}{path}" if path else str(shadow)}


def test_database_urls_that_cannot_be_used_exit_2(tmp_path: Path) -> None:
    """A PostgreSQL URL without psycopg, an unknown kind of URL and a SQLite file in a
    folder that does not exist exited 1; README gives 2 for a missing extra or file."""
    pg = run("--db-url", "postgresql://c@127.0.0.1:1/c", "plans", "list",
             env=without_psycopg(tmp_path))
    assert pg.code == 2, pg.err
    assert "pip install 'consolidator[postgresql]'" in one_line(pg)
    bogus = run("--db-url", "bogus://x", "plans", "list")
    assert bogus.code == 2, bogus.err
    assert one_line(bogus).startswith("consolidator: error: invalid database URL 'bogus://x'")
    missing = tmp_path / "nope" / "c.db"
    for args in (("db", "upgrade"), ("plans", "list")):
        result = run("--db-url", f"sqlite:///{missing}", *args)
        assert result.code == 2, (args, result.err)
        assert f"the directory {missing.parent} does not exist" in one_line(result)
    assert not missing.parent.exists()


def test_the_plan_says_how_the_executor_orders_waves(db: str, bundled_scenario: Path) -> None:
    """The plan said 'a wave starts when the one before it is done', but the executor starts
    a move as soon as the earlier moves from or to its hosts are done (the demo printed
    'wave 2: starting' while wave 1 still ran)."""
    made = run("plan", "--scenario", str(bundled_scenario), db_url=db)
    assert made.code == 0, made.err
    assert "a wave starts when the one before it is done" not in made.out
    assert "(a move starts once the earlier waves' moves from or to its hosts are done)" \
        in made.out


@pytest.mark.parametrize("config_value, migrations", [("0", 0), ("", None)])
def test_max_migrations_0_means_none_in_the_config_as_on_the_command_line(
        db: str, bundled_scenario: Path, tmp_path: Path, config_value: str,
        migrations: int | None) -> None:
    """'--max-migrations 0' meant none and 'max_migrations = 0' meant unlimited. Now 0 is
    none in both; an empty value (the default) is no limit."""
    config = tmp_path / "c.conf"
    config.write_text(f"[planner]\nmax_migrations = {config_value}\n")
    from_config = run("--config", str(config), "plan", "--scenario", str(bundled_scenario),
                      "-f", "json", db_url=db)
    assert from_config.code == 0, from_config.err
    plan = json.loads(from_config.out)
    assert plan["choice"]["budget"]["max_migrations"] == migrations
    if migrations == 0:
        assert plan["migrations"] == []
        flag = run("plan", "--scenario", str(bundled_scenario), "--max-migrations", "0",
                   "-f", "json", db_url=db)
        assert json.loads(flag.out)["migrations"] == []
    else:
        assert len(plan["migrations"]) > 0


def test_no_cloud_configured_says_where_to_configure_one(db: str, tmp_path: Path) -> None:
    """It said openstacksdk's 'Auth plugin requires parameters which were not given:
    auth_url'."""
    home = tmp_path / "home"
    home.mkdir()
    result = run("snapshot", db_url=db, cwd=home, env={"HOME": str(home)})
    assert result.code == 1
    line = one_line(result)
    assert "auth_url" not in line.replace("OS_AUTH_URL", "")
    assert line.startswith("consolidator: error: no cloud is configured: no clouds.yaml")
    for named in ("OS_CLIENT_CONFIG_FILE", "--cloud NAME", "OS_CLOUD=NAME",
                  "consolidator demo"):
        assert named in line


@pytest.mark.parametrize("what", ["snapshots", "plans"])
def test_value_format_of_an_empty_listing_prints_nothing(db: str, what: str) -> None:
    listed = run(what, "list", "-f", "value", db_url=db)
    assert listed.code == 0 and listed.out == "", repr(listed.out)


def test_days_and_planetlab_together_are_refused(db: str) -> None:
    """'--days all --planetlab 20110303' replayed eleven days."""
    result = run("simulate", "trace", "--days", "all", "--planetlab", "20110303", db_url=db)
    assert result.code == 2, result.err
    assert "--days and --planetlab both name the days to replay: give one" in one_line(result)

