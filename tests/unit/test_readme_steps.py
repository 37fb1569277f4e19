"""Issue 45, a newcomer's walk: README's two set-up commands shared one .venv (the second
reused the first in one clone), the quick start wrote to /etc/consolidator/ which no step
created, and README gave no run time for 'simulate trace --days all'."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.rst").read_text()


def test_the_two_set_up_commands_use_different_venvs() -> None:
    venvs = re.findall(r"python3 -m venv (\S+) && \. (\S+)/bin/activate", README)
    assert len(venvs) == 2, venvs
    assert all(made == used for made, used in venvs), venvs
    assert venvs[0][0] != venvs[1][0], venvs


def test_the_quick_start_creates_the_folder_it_writes_to() -> None:
    quick = README.split("Quick start against a real cloud", 1)[1].split("\nCommands\n", 1)[0]
    created = quick.find("mkdir -p -m 700 /etc/consolidator")
    written = quick.find("> /etc/consolidator/")
    assert created != -1 and written != -1 and created < written


def test_days_all_has_its_run_time() -> None:
    said = README.split("``--days all`` the ten with the medians", 1)[1][:200]
    assert re.search(r"about \d+ minutes on a quiet\s+2-core machine", said), said
