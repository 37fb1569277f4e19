"""The version is written once, in setup.cfg, and read from the package metadata; the
release notes have a section for it (issue 34)."""

from __future__ import annotations

import configparser
import re
from importlib.metadata import version
from pathlib import Path

import consolidator
from consolidator.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_the_installed_distributions() -> None:
    assert consolidator.__version__ == version("consolidator")


def test_consolidator_version_prints_it(capsys) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.split()[-1] == version("consolidator")


def test_no_module_writes_a_version_of_its_own() -> None:
    """One source of truth: a literal beside setup.cfg's would drift from it."""
    for path in (ROOT / "consolidator").rglob("*.py"):
        assert not re.search(r"^__version__\s*=\s*['\"]", path.read_text(encoding="utf-8"),
                             re.M), path


def test_the_release_notes_have_a_section_for_setup_cfgs_version() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    release = re.match(r"\d+\.\d+\.\d+", cfg["metadata"]["version"]).group(0)
    notes = (ROOT / "docs" / "release-notes.rst").read_text(encoding="utf-8")
    assert re.search(rf"^{re.escape(release)} ", notes, re.M), release
