"""Misuse found by a new user (issue 34): each is one clear line, with the exit code of the
rule README and docs/operator-guide.rst state (2: the command line is wrong for what it
names; 1: a sound request whose operation failed), and it stores nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.functional.cli import Result, run
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import operator_for
from tests.functional.test_drains import zoned


def one_line(result: Result) -> str:
    """The one line on stderr (and nothing on stdout, no traceback)."""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert result.out == "" and "Traceback" not in result.err
    return lines[0]


def stored(db_url: str, what: str) -> list:
    listed = run(what, "list", "--format", "json", db_url=db_url)
    assert listed.code == 0, listed.err
    return json.loads(listed.out)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=url).code == 0
    return url


@pytest.fixture
def zoned_file(tmp_path: Path) -> Path:
    import yaml

    path = tmp_path / "zoned.yaml"
    path.write_text(yaml.safe_dump(zoned()))
    return path


@pytest.mark.parametrize("scope, named", [
    ("az=nosuch", "no compute host is in the availability zone 'nosuch' (the zones: east, "
                  "west)"),
    ("aggregate=nosuch", "no compute host is in the aggregate 'nosuch' (the aggregates: "
                         "freepool)"),
    ("host=x*", "no compute host name matches 'x*'"),
])
def test_a_scope_that_matches_no_host_is_named_and_nothing_is_stored(
        sqlite_url: str, zoned_file: Path, scope: str, named: str) -> None:
    """It exited 0 with an empty plan."""
    made = run("plan", "--scenario", str(zoned_file), "--scope", scope, db_url=sqlite_url)
    assert made.code == 2
    assert one_line(made) == f"consolidator: error: scope {scope}: {named}"
    assert stored(sqlite_url, "snapshots") == [] and stored(sqlite_url, "plans") == []
    snap = run("snapshot", "--scenario", str(zoned_file), db_url=sqlite_url).out.strip()
    again = run("plan", "--snapshot", snap, "--scope", scope, db_url=sqlite_url)
    assert again.code == 2 and named in one_line(again)
    assert stored(sqlite_url, "plans") == []


def test_a_scope_on_the_live_cloud_is_checked_before_the_snapshot_is_stored(
        tmp_path: Path) -> None:
    with served_cloud(zoned(), tmp_path) as served:
        op = operator_for(served, tmp_path)
        made = op("plan", "--scope", "az=nosuch")
        assert made.code == 2 and "scope az=nosuch: no compute host is in the availability " \
            "zone 'nosuch'" in made.err
        refused = op("hosts", "drain", "nohost", "--yes")
        assert refused.code == 2 and "no compute host is named 'nohost'" in refused.err
        assert "Traceback" not in made.err + refused.err
        assert stored(op.db_url, "snapshots") == [] and stored(op.db_url, "plans") == []


def test_an_unknown_journal_action_lists_the_valid_ones(sqlite_url: str) -> None:
    """It printed an empty table and exited 0."""
    bad = run("journal", "--action", "bogus", db_url=sqlite_url)
    assert bad.code == 2
    line = one_line(bad)
    assert line.startswith("consolidator: error: unknown journal action 'bogus': choose "
                           "from ")
    for action in ("migrate", "disable", "enable", "power_off", "power_on", "abort"):
        assert action in line
    fine = run("journal", "--action", "power_off", "--action", "migrate", db_url=sqlite_url)
    assert fine.code == 0, fine.err


def test_exit_codes_follow_one_rule(sqlite_url: str, tmp_path: Path,
                                    bundled_scenario: Path) -> None:
    """A missing --scenario file exited 1 and a missing --trace 2; applying a cancelled plan
    exited 2 and approving one 1. Now: what the command line names is missing or cannot
    take the action, 2; the operation failed, 1."""
    missing = tmp_path / "nope.yaml"
    for args in (("plan", "--scenario", str(missing)), ("snapshot", "--scenario", str(missing)),
                 ("simulate", "trace", "--trace", str(missing)),
                 ("--config", str(tmp_path / "nope.conf"), "plans", "list")):
        result = run(*args, db_url=sqlite_url)
        assert result.code == 2, (args, result.err)
        assert str(missing.parent) in one_line(result)
    plan = run("plan", "--scenario", str(bundled_scenario), "-a", "firstfit", "-f", "id",
               db_url=sqlite_url).out.strip()
    assert run("plan", "cancel", plan, db_url=sqlite_url).code == 0
    codes = {}
    for args in (("plan", "approve", plan), ("apply", plan, "--yes"),
                 ("plan", "show", "feedbeef"), ("apply", "feedbeef", "--yes"),
                 ("snapshots", "show", "feedbeef")):
        result = run(*args, db_url=sqlite_url)
        codes[args[:2]] = result.code
        one_line(result)
    assert set(codes.values()) == {2}, codes
    bad_content = tmp_path / "bad.yaml"
    bad_content.write_text("hosts: [\n")
    failed = run("plan", "--scenario", str(bad_content), db_url=sqlite_url)
    assert failed.code == 1 and "invalid YAML" in one_line(failed)


@pytest.mark.parametrize("args, hint", [
    (("plan", "--bogus"), "consolidator plan --help"),
    (("snapshots", "show"), "consolidator snapshots show --help"),
    (("nosuchcommand",), "consolidator --help"),
    (("journal", "--limit", "0"), "consolidator journal --help"),
])
def test_usage_errors_are_one_line_pointing_at_help(args: tuple[str, ...], hint: str) -> None:
    """click printed three lines: its usage, 'Try ... for help.' and the error."""
    result = run(*args)
    assert result.code == 2
    line = one_line(result)
    assert line.startswith("consolidator: error: ") and line.endswith(f"(see '{hint}')")


def test_a_group_without_its_command_still_shows_its_help() -> None:
    bare = run("db")
    assert bare.code == 2 and bare.err.startswith("Usage: consolidator db [OPTIONS] COMMAND")
    assert "upgrade" in bare.err and "consolidator: error" not in bare.err


def test_the_demo_start_up_limit_is_an_option_named_when_it_is_reached(tmp_path: Path) -> None:
    """The real Nova's demo failed at a fixed 600 s start-up limit on a loaded machine; the
    limit is --start-timeout, and the error names it (no interpreter starts in 10 ms)."""
    result = run("demo", "--start-timeout", "0.01", cwd=tmp_path, timeout=120)
    assert result.code == 1
    assert one_line(Result(result.code, "", result.err)) == (
        "consolidator: error: demo failed at step 1 (Start the fake cloud and its emulated "
        "BMCs): the fake cloud did not start: no progress in 0.01 s (a loaded machine needs "
        "more: give --start-timeout SECONDS)")
    assert not list(tmp_path.iterdir())
