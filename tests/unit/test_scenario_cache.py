"""Parsed YAML scenarios are cached by content: same result, never stale, off on request."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from consolidator.scenario.files import load_scenario, read_document

DOC = {"hosts": [{"name": "c1", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100}],
       "instances": [{"name": "vm1", "host": "c1", "vcpus": 2, "memory_mb": 2048,
                      "disk_gb": 10}]}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("CONSOLIDATOR_CACHE_DIR", str(where))
    return where


def test_a_second_load_comes_from_the_cache_and_equals_the_first(tmp_path: Path,
                                                                 cache: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(DOC))
    first = load_scenario(path)
    assert len(list(cache.glob("*.json"))) == 1
    assert load_scenario(path) == first
    # The cached copy is what is read: corrupt it and the file is parsed again, not trusted.
    next(cache.glob("*.json")).write_text("{not json")
    assert load_scenario(path) == first


def test_a_changed_file_is_never_served_stale(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(DOC))
    load_scenario(path)
    changed = {**DOC, "instances": []}
    path.write_text(yaml.safe_dump(changed))
    assert load_scenario(path).cluster.instances == ()


def test_documents_json_cannot_hold_are_not_cached(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: 2026-11-25\nhosts: []\n")     # a YAML date
    assert str(read_document(path)["name"]) == "2026-11-25"
    assert not list(cache.glob("*.json"))


def test_an_empty_cache_dir_turns_the_cache_off(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSOLIDATOR_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(DOC))
    load_scenario(path)
    assert not (tmp_path / "xdg").exists()
