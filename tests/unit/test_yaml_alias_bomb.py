"""Issue 23, point 9: a 429-byte YAML alias bomb exhausted memory ("unexpected error:
MemoryError" after 20 s under a 2 GB limit); the scenario cache dumped the expanded document.
Aliases are counted before anything is expanded: a file whose aliases would add more values
than a bound is refused in one line, and nothing is cached."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from consolidator.core.errors import ScenarioError
from consolidator.scenario import yaml_loader
from consolidator.scenario.files import load_scenario, read_document
from consolidator.store.db import make_engine, upgrade

#: The classic "billion laughs": 9 levels of 9 aliases, 9**9 values once expanded.
BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{b}: &{b} [{','.join(['*' + a] * 9)}]" for a, b in
       zip("abcdefgh", "bcdefghi", strict=True)]
) + "\nhosts: *i\n"

#: An anchor shared by many hosts with a merge key: aliases, but a bounded expansion.
MERGED = "hosts:\n  - &d {name: c0, vcpus: 16, memory_mb: 65536, disk_gb: 1000}\n" + "".join(
    f"  - {{<<: *d, name: c{n}}}\n" for n in range(1, 200)) + "instances: []\n"


def test_the_bomb_is_small() -> None:
    assert len(BOMB.encode()) < 600


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CONSOLIDATOR_CACHE_DIR", str(cache))
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    with pytest.raises(ScenarioError) as refused:
        read_document(path)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message
    assert "aliases" in message and "expand" in message
    assert not list(cache.glob("*.json"))


def test_a_bomb_inside_a_merge_key_is_refused_too() -> None:
    text = BOMB.replace("hosts: *i\n", "hosts:\n  - {<<: {x: *i}, name: c1}\n")
    with pytest.raises(yaml_loader.AliasExpansionError):
        yaml_loader.load(text)


def test_anchors_with_a_bounded_expansion_still_load(tmp_path: Path) -> None:
    path = tmp_path / "merged.yaml"
    path.write_text(MERGED)
    scenario = load_scenario(path)
    assert len(scenario.cluster.hosts) == 200
    assert scenario.cluster.hosts[7].vcpus == 16


def test_the_command_line_says_it_in_one_line_within_a_memory_limit(tmp_path: Path) -> None:
    """As the review ran it: under a 2 GB address-space limit, one line and exit 2 or 1, no
    MemoryError."""
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    limit = 2 * 1024 ** 3
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    engine.dispose()

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run([sys.executable, "-m", "consolidator", "--db-url",
                           f"sqlite:///{tmp_path / 'c.db'}", "snapshot", "--scenario",
                           str(path)], capture_output=True, text=True, timeout=120,
                          preexec_fn=cap, env={**os.environ, "CONSOLIDATOR_CACHE_DIR": ""})
    assert done.returncode in (1, 2), done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "MemoryError" not in done.stderr and "aliases" in lines[0]
