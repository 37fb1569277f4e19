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
