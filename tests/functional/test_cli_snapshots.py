"""The snapshot commands run as a user would: real subprocesses, real databases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from consolidator.scenario.files import load_cluster
from tests.functional.cli import run


def test_snapshot_show_export_round_trip(db_url: str, bundled_scenario: Path,
                                         tmp_path: Path) -> None:
    result = run("snapshot", "--scenario", str(bundled_scenario), db_url=db_url)
    assert result.code == 0, result.err
    snapshot_id = result.out.strip()

    shown = run("snapshots", "show", snapshot_id, "--format", "json", db_url=db_url)
    assert shown.code == 0, shown.err
    data = json.loads(shown.out)
    assert data["id"] == snapshot_id
    assert len(data["hosts"]) == 11
    assert {h["name"] for h in data["hosts"]} == {f"compute-{n:02d}" for n in range(1, 12)}

    table = run("snapshots", "show", snapshot_id[:8], db_url=db_url)
    assert table.code == 0 and "compute-07" in table.out and "RAM GiB" in table.out

    exported = tmp_path / "export.yaml"
    assert run("snapshots", "export", snapshot_id, "--output", str(exported),
               db_url=db_url).code == 0
    assert load_cluster(exported) == load_cluster(bundled_scenario)
    again = run("snapshot", "--scenario", str(exported), db_url=db_url)
    assert again.code == 0
    stdout_export = run("snapshots", "export", again.out.strip(), db_url=db_url)
    assert yaml.safe_load(stdout_export.out) == yaml.safe_load(exported.read_text())

    listed = run("snapshots", "list", "--format", "json", db_url=db_url)
    assert [s["id"] for s in json.loads(listed.out)] == [again.out.strip(), snapshot_id]


def test_db_upgrade_then_commands_work(empty_db_url: str, bundled_scenario: Path) -> None:
    refused = run("snapshots", "list", db_url=empty_db_url)
    assert refused.code == 1
    assert refused.err.strip().endswith("run 'consolidator db upgrade'")
    assert len(refused.err.strip().splitlines()) == 1
    upgraded = run("db", "upgrade", db_url=empty_db_url)
    assert upgraded.code == 0 and "upgraded" in upgraded.out
    assert run("snapshots", "list", db_url=empty_db_url).code == 0


def test_default_database_is_in_user_data_dir(tmp_path: Path, bundled_scenario: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)}
    assert run("db", "upgrade", env=env, cwd=tmp_path).code == 0
    assert (tmp_path / "data" / "consolidator" / "consolidator.db").exists()
    assert run("snapshot", "--scenario", str(bundled_scenario), env=env, cwd=tmp_path).code == 0


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=url).code == 0
    return url


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("hosts: [\n  {name: c1", "invalid YAML"),
    ("hosts:\n- {name: c1, vcpus: 1, memory_mb: 1}\n", "missing key 'disk_gb'"),
    ("hosts:\n- {name: c1, vcpus: 1, memory_mb: 1, disk_gb: 1}\ninstances:\n"
     "- {name: v, host: c2, vcpus: 1, memory_mb: 1, disk_gb: 1}\n",
     "host 'c2' is not a known host"),
])
def test_bad_scenarios_get_one_line(sqlite_url: str, tmp_path: Path, content: str | None,
                                    message: str) -> None:
    path = tmp_path / "bad.yaml"
    if content is not None:
        path.write_text(content)
    result = run("snapshot", "--scenario", str(path), db_url=sqlite_url)
    assert result.code == (2 if content is None else 1)   # a missing file: a usage error
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0]
    assert "Traceback" not in result.err
    assert run("snapshots", "list", "--format", "json", db_url=sqlite_url).out.strip() == "[]"


def test_unknown_snapshot_and_usage_errors(sqlite_url: str, tmp_path: Path) -> None:
    missing = run("snapshots", "show", "0000dead", db_url=sqlite_url)
    assert missing.code == 2
    assert missing.err.strip() == ("consolidator: error: snapshot '0000dead' does not exist "
                                   "(see 'consolidator snapshots list')")
    usage = run("snapshots", "show", db_url=sqlite_url)
    assert usage.code == 2 and "Missing argument" in usage.err
    bad_format = run("snapshots", "list", "--format", "xml", db_url=sqlite_url)
    assert bad_format.code == 2
    conf = tmp_path / "c.conf"
    conf.write_text("[nope]\n")
    bad_conf = run("--config", str(conf), "snapshots", "list", db_url=sqlite_url)
    assert bad_conf.code == 1 and "unknown section [nope]" in bad_conf.err


def test_every_command_has_help() -> None:
    for args in (["--help"], ["db", "--help"], ["db", "upgrade", "--help"],
                 ["snapshot", "--help"], ["snapshots", "list", "--help"],
                 ["snapshots", "show", "--help"], ["snapshots", "export", "--help"]):
        result = run(*args)
        assert result.code == 0 and "Usage:" in result.out, args


def test_mistyped_sqlite_url_leaves_nothing_behind(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'typo' / 'sub' / 'x.db'}"
    result = run("snapshots", "list", db_url=url)
    assert result.code == 2 and "does not exist" in result.err
    assert not (tmp_path / "typo").exists()
