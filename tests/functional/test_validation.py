"""Validation at the door: instances no host can take, unknown -o options, bad config values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.functional.cli import run

HUGE = {"hosts": [{"name": f"h{n}", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100}
                  for n in (1, 2, 3)],
        "instances": [{"name": "huge", "host": "h1", "vcpus": 512, "memory_mb": 4096,
                       "disk_gb": 10},
                      {"name": "small", "host": "h2", "vcpus": 1, "memory_mb": 1024,
                       "disk_gb": 10}]}


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=url).code == 0
    return url


@pytest.mark.parametrize("algorithm", ["firstfit", "zoned-bestfit", "hvp", "importance-3d"])
def test_an_instance_larger_than_every_host_is_named_in_a_note(
        tmp_path: Path, db_url: str, algorithm: str) -> None:
    scenario = tmp_path / "huge.yaml"
    scenario.write_text(yaml.safe_dump(HUGE))
    made = run("plan", "-a", algorithm, "--scenario", str(scenario), "--format", "json",
               db_url=db_url)
    assert made.code == 0, made.err
    plan = json.loads(made.out)
    notes = [n for n in plan["notes"] if "huge" in n]
    assert notes and "never move" in notes[0] and "512 VCPU" in notes[0]
    assert "huge" not in {m["instance_name"] for m in plan["migrations"]}
    assert "h1" not in plan["power_off"]
    shown = run("plan", "show", plan["id"], db_url=db_url)
    assert "6400%" not in shown.out or "never move" in shown.out


@pytest.mark.parametrize(("args", "wanted"), [
    (["-a", "hvp", "-o", "foo=1"],
     ["unknown option 'foo' for hvp", "light=true|false", "window=int"]),
    (["-a", "firstfit", "-r", "xbalance", "-o", "alpha=0.1"],
     ["unknown option 'alpha' for firstfit with ranking xbalance", "order=size|given",
      "weights="]),
    (["-a", "hvp", "-o", "window=wide"], ["option window=wide: not an integer"]),
    (["-a", "firstfit", "-r", "abp", "-o", "alpha=much"], ["option alpha=much: not a number"]),
])
def test_unknown_or_malformed_options_are_refused_with_the_valid_keys(
        bundled_scenario: Path, db_url: str, args: list[str], wanted: list[str]) -> None:
    result = run("plan", *args, "--scenario", str(bundled_scenario), db_url=db_url)
    assert result.code == 2, result.out + result.err
    assert len(result.err.strip().splitlines()) == 1
    for text in wanted:
        assert text in result.err, text


def test_every_registered_option_is_accepted(bundled_scenario: Path, db_url: str) -> None:
    for args in (["-a", "importance-3d", "-o", "bin=8x8x6", "-o", "assign=false"],
                 ["-a", "firstfit", "-o", "order=given", "-r", "pack", "-o",
                  "prime_resource=memory_mb"],
                 ["-a", "hvp", "-o", "window=2", "-o", "strategies=ff"]):
        result = run("plan", *args, "--scenario", str(bundled_scenario), db_url=db_url)
        assert result.code == 0, (args, result.err)


@pytest.mark.parametrize(("text", "wanted"), [
    ("[planner]\nalgorithm = nope\n", "[planner] algorithm = 'nope'"),
    ("[daemon]\nschedule = 99 * * *\n", "[daemon] schedule = '99 * * *'"),
    ("[daemon]\nschedule = 61 * * * *\n", "[daemon] schedule = '61 * * * *'"),
    ("[daemon]\ntimezone = Mars/Base\n", "[daemon] timezone = 'Mars/Base'"),
    ("[metrics]\naddress = not an address\n", "[metrics] address = 'not an address'"),
    ("[metrics]\nport = 70000\n", "[metrics] port = '70000'"),
    ("[executor]\nmax_parallel = 0\n", "[executor] max_parallel = '0'"),
    ("[inventory]\npage_size = -5\n", "[inventory] page_size = '-5'"),
    ("[planner]\nconfidence = 1.5\n", "[planner] confidence = '1.5'"),
    ("[executor]\nlease_ttl = 0\n", "[executor] lease_ttl = '0'"),
])
def test_every_config_value_is_validated_whatever_the_command(
        tmp_path: Path, db_url: str, text: str, wanted: str) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text(text)
    result = run("--config", str(conf), "snapshots", "list", db_url=db_url)
    assert result.code != 0, result.out
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and wanted in lines[0] and str(conf) in lines[0], result.err


def test_good_config_values_pass(tmp_path: Path, db_url: str) -> None:
    conf = tmp_path / "good.conf"
    conf.write_text("[daemon]\nschedule = */15 8-18 * * mon-fri\ntimezone = Europe/Oslo\n"
                    "[metrics]\naddress = ::\nport = 9100\n[planner]\nconfidence = 0.99\n")
    result = run("--config", str(conf), "snapshots", "list", db_url=db_url)
    assert result.code == 0, result.err


@pytest.mark.parametrize("args", [
    ("report", "--days", "nan"), ("report", "--days", "inf"),
    ("plan", "--scenario", "SCENARIO", "--capacity-model", "ucac", "--confidence", "nan"),
    ("plan", "--scenario", "SCENARIO", "--max-moved-gib", "inf"),
])
def test_a_number_option_refuses_nan_and_infinity(tmp_path: Path, db_url: str,
                                                 args: tuple[str, ...]) -> None:
    """nan passes every range check and inf overflows: both are usage errors in one line."""
    scenario = tmp_path / "huge.yaml"
    scenario.write_text(yaml.safe_dump(HUGE))
    made = run(*[str(scenario) if a == "SCENARIO" else a for a in args], db_url=db_url)
    assert made.code == 2, made.out + made.err
    assert "is not a finite number" in made.err and "unexpected error" not in made.err
