"""The sample config, bmc.yaml, systemd unit and Prometheus rules ship in the wheel, and
`consolidator config files|sample` finds them in an installed package (issue 34: a wheel left
them out, so a pip-installed operator had none of them)."""

from __future__ import annotations

import configparser
import json
from pathlib import Path

import pytest

from consolidator.app.config import load_config
from consolidator.app.shipped import DEPLOY, shipped_file, shipped_files
from consolidator.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_config_sample_prints_the_sample_config_which_loads(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(["config", "sample"], capsys)
    assert code == 0 and err == ""
    assert out == (DEPLOY / "consolidator.conf.sample").read_text()
    copied = tmp_path / "consolidator.conf"
    copied.write_text(out)
    assert load_config(copied, required=True).values


@pytest.mark.parametrize("name", ["consolidator.service", "bmc.yaml",
                                  "prometheus/recording-rules.yml", "recording-rules.yml"])
def test_config_sample_prints_each_shipped_file(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["config", "sample", name], capsys)
    assert code == 0 and out == shipped_file(name).path.read_text() and out.strip()


def test_an_unknown_name_is_one_usage_line_naming_the_choices(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["config", "sample", "nosuch.conf"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "choose among" in err and "consolidator.service" in err


def test_config_files_lists_every_shipped_file_with_its_installed_path(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["config", "files", "-f", "json"], capsys)
    assert code == 0
    listed = {r["name"]: r for r in json.loads(out)}
    assert {"consolidator.conf", "bmc.yaml", "consolidator.service",
            "prometheus/recording-rules.yml"} <= set(listed)
    for record in listed.values():
        assert Path(record["path"]).is_file() and record["purpose"]
    assert len(listed) == len(shipped_files())


def test_setup_cfg_ships_every_file_under_deploy() -> None:
    """package_data's globs: a file added to deploy/ (an alert rule file) is in the wheel."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    globs = cfg["options.package_data"]["consolidator"].split()
    package = ROOT / "consolidator"
    shipped = {p for pattern in globs for p in package.glob(pattern) if p.is_file()}
    files = {p for p in DEPLOY.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert files and files <= shipped, sorted(str(p) for p in files - shipped)


def test_the_files_live_once_in_the_package_not_again_in_etc() -> None:
    """One source of truth: etc/ holds no copy of a shipped file."""
    names = {p.name for p in DEPLOY.rglob("*") if p.is_file()}
    copies = [p for p in (ROOT / "etc").rglob("*") if p.name in names]
    assert copies == []


def test_each_file_says_what_it_is_in_a_whole_sentence() -> None:
    """'config files' took a file's first comment line, which cut the alert rules' off at
    '... Load it'; it takes the first sentence of the opening comment."""
    purposes = {f.name: f.purpose for f in shipped_files()}
    assert purposes["prometheus/alert-rules.yml"] == (
        "Alerting rules for the consolidator daemon's own metrics (/metrics, [metrics] port)")
    for name, purpose in purposes.items():
        assert purpose and not purpose.endswith(("Load it", ",")), name
