"""The operator guide's fake-cloud walkthrough, run as written, prints what the guide shows.

The section "Trying things on a fake cloud" of docs/operator-guide.rst holds
``.. code-block:: console`` blocks. In each, a line starting ``$ `` is a command, typed
exactly as an operator would, and the lines after it (up to the next ``$ ``) are what it
prints, stdout and stderr as a terminal shows them. The test runs every command in order in
bash, in a fresh directory with a fresh HOME (so the default SQLite database is new), and
compares. In the shown output:

- a line that is only ``...`` stands for any number of lines (none included);
- ``...`` inside a line stands for any text on that line;
- an upper-case word in angle brackets (``<PLAN>``, ``<SNAP>``, ``<S>``) stands for one
  word that differs from run to run (an id, a time, a count of seconds).

Everything else must match exactly (trailing spaces aside). A block preceded by the comment
``.. walk: serve`` is the fake cloud's own shell: its command is started in the background,
and the walk goes on once the files it writes (``--write-clouds-yaml``,
``--write-bmc-yaml``) exist. Shell variables (``SNAP=$(...)``) and exports carry over from
one command to the next, as in one shell. Every command must exit 0.

When a command's output changes on purpose, the failure message prints what it printed, to
paste into the guide (with the wildcards above for ids and times).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from consolidator.emulators.fake.process import stop_child
from tests.functional.waits import PATIENCE_S

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operator-guide.rst"
SECTION = "Trying things on a fake cloud"
BLOCK = ".. code-block:: console"
SERVE_MARK = ".. walk: serve"
START_TIMEOUT_S = PATIENCE_S
COMMAND_TIMEOUT_S = 900.0
#: Settings the walk gives the served scenario (its copy): emulated migrations take RAM /
#: bandwidth seconds, 1-16 s each at the default 1 GiB/s. Nothing the guide shows depends
#: on it (times are wildcards), and the walk runs in far less time.
FAST = {"migration_bandwidth_mb_s": 16384.0}


@dataclass
class Step:
    """One command of the walkthrough and the output the guide shows for it."""

    command: str
    shown: list[str] = field(default_factory=list)
    background: bool = False


def section(text: str, title: str) -> str:
    """The body of a top-level section of an RST document."""
    heading = re.search(rf"(?:^|\n){re.escape(title)}\n={{{len(title)}}}\n", text)
    assert heading is not None, f"no section {title!r}"
    body = text[heading.end():]
    following = re.search(r"\n[^\n]+\n=+\n", body)
    return body[:following.start()] if following else body


def steps(text: str) -> list[Step]:
    """Every command of the section's console blocks, in order, with its shown output."""
    lines = section(text, SECTION).splitlines()
    found: list[Step] = []
    for i, line in enumerate(lines):
        if line.strip() != BLOCK:
            continue
        background = i > 0 and lines[i - 1].strip() == SERVE_MARK
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        while j < len(lines) and (lines[j].startswith("   ") or not lines[j].strip()):
            content = lines[j][3:]
            if content.startswith("$ "):
                found.append(Step(content[2:], background=background))
            elif found and content.strip():
                found[-1].shown.append(content.rstrip())
            elif found and found[-1].shown:     # a blank line inside an output
                found[-1].shown.append("")
            j += 1
    for step in found:
        while step.shown and not step.shown[-1]:
            step.shown.pop()
    return found


def line_pattern(line: str) -> re.Pattern[str] | None:
    """One shown line as a regex (None for a line that is only '...': any lines)."""
    if line.strip() == "...":
        return None
    pieces = re.split(r"(\.\.\.|<[A-Z][A-Z_]*>)", line)
    return re.compile("".join(r".*?" if p == "..." else r"\S+" if re.fullmatch(r"<[A-Z_]+>", p)
                              else re.escape(p) for p in pieces))


def matches(shown: list[str], printed: str) -> bool:
    """Whether a command's output is what the guide shows for it: line by line, a '...'
    line taking any number of lines (a table of which shown line can end where: linear in
    the lengths, never a backtracking regex over the whole output)."""
    patterns = [line_pattern(line) for line in shown]
    lines = [line.rstrip() for line in printed.splitlines()]
    # can[i]: the shown lines so far can match exactly the first i printed lines
    can = [True] + [False] * len(lines)
    for pattern in patterns:
        if pattern is None:
            reached = False
            for i in range(len(can)):
                reached = reached or can[i]
                can[i] = reached
        else:
            can = [False] + [can[i] and pattern.fullmatch(lines[i]) is not None
                             for i in range(len(lines))]
    return can[len(lines)]


class Shell:
    """Runs commands one by one in bash, keeping variables and exports between them."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = cwd, env
        self.state = cwd / ".walk-state.sh"
        self.state.write_text("")

    def run(self, command: str) -> tuple[int, str]:
        """Run one command line; its exit status and what it printed (stdout and stderr)."""
        script = (f"source {shlex.quote(str(self.state))} 2>/dev/null\n{command}\n"
                  f"__status=$?\n{{ export -p; for __v in $(compgen -v | grep -E "
                  f"'^[A-Z][A-Z0-9_]*$'); do declare -p \"$__v\"; done; }} "
                  f"> {shlex.quote(str(self.state))}.new 2>/dev/null\n"
                  f"mv {shlex.quote(str(self.state))}.new {shlex.quote(str(self.state))}\n"
                  f"exit $__status\n")
        proc = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=COMMAND_TIMEOUT_S)
        return proc.returncode, proc.stdout

    def start(self, command: str, log: Path) -> subprocess.Popen[str]:
        """Start a long-running command (the fake cloud) in the background."""
        with log.open("w") as out:
            return subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=self.cwd,
                                    env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                    text=True, start_new_session=True)


def speed_up(command: str, cwd: Path) -> None:
    """Give the scenario a serve command names (a file under cwd) the FAST settings."""
    words = shlex.split(command)
    for i, word in enumerate(words[:-1]):
        if word == "--scenario" and (cwd / words[i + 1]).is_file():
            scenario = cwd / words[i + 1]
            doc = yaml.safe_load(scenario.read_text())
            doc["settings"] = {**(doc.get("settings") or {}), **FAST}
            scenario.write_text(yaml.safe_dump(doc, sort_keys=False))


def written_files(command: str, cwd: Path) -> list[Path]:
    """The files a fake-cloud serve command writes once it is ready."""
    words = shlex.split(command)
    return [cwd / words[i + 1] for i, word in enumerate(words[:-1])
            if word in ("--write-clouds-yaml", "--write-bmc-yaml")]


def test_the_parser_reads_commands_outputs_and_wildcards() -> None:
    """Two blocks, the first marked serve; outputs with line and word wildcards."""
    text = (f"{SECTION}\n{'=' * len(SECTION)}\n\nin one shell:\n\n{SERVE_MARK}\n{BLOCK}\n\n"
            f"   $ serve --write-clouds-yaml c.yaml\n\nthen:\n\n{BLOCK}\n\n"
            f"   $ SNAP=$(snap)\n   $ show $SNAP\n   plan: <PLAN>\n   ...\n   done in ... s\n"
            f"\nNext\n====\n\n{BLOCK}\n\n   $ not this\n")
    found = steps(text)
    assert [(s.command, s.background) for s in found] == [
        ("serve --write-clouds-yaml c.yaml", True), ("SNAP=$(snap)", False),
        ("show $SNAP", False)]
    assert found[2].shown == ["plan: <PLAN>", "...", "done in ... s"]
    assert matches(found[2].shown, "plan: 1a2b\nrow 1\nrow 2\ndone in 3 min 2 s\n")
    assert matches(found[2].shown, "plan: 1a2b\ndone in 3 s")
    assert not matches(found[2].shown, "plan: 1a 2b\ndone in 3 s")
    assert not matches(found[2].shown, "plan: 1a2b\ndone in 3 s\nmore")
    assert not matches(found[1].shown, "reading cloud 'fake' ...")
    # several '...' lines against a long output that does not match: answered, not stuck
    assert not matches(["a", "...", "b ...", "...", "c", "...", "d"], "a\n" + "b x\n" * 5000)
    assert matches(["a", "...", "b ...", "...", "d"], "a\n" + "b x\n" * 5000 + "d\n")


def test_the_served_scenario_copy_gets_fast_migrations(tmp_path: Path) -> None:
    """speed_up adds FAST to the named scenario's settings and keeps everything else."""
    doc = {"settings": {"noauth": True}, "hosts": [{"name": "h1", "vcpus": 4}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    speed_up("consolidator fake-cloud serve --scenario s.yaml --bmc", tmp_path)
    assert yaml.safe_load((tmp_path / "s.yaml").read_text()) == {
        "settings": {"noauth": True, **FAST}, "hosts": doc["hosts"]}


def test_the_guide_walkthrough_prints_what_the_guide_shows(tmp_path: Path) -> None:
    """docs/operator-guide.rst, 'Trying things on a fake cloud', from top to bottom."""
    walk = steps(GUIDE.read_text())
    assert sum(s.background for s in walk) == 1 and len(walk) >= 8
    shutil.copytree(ROOT / "etc", tmp_path / "etc")  # the guide runs from a clone
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OS_", "CONSOLIDATOR_"))}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1", COLUMNS="200")
    shell = Shell(tmp_path, env)
    served = None
    wrong = []
    try:
        for step in walk:
            if step.background:
                speed_up(step.command, tmp_path)
                served = shell.start(step.command, tmp_path / "served.log")
                deadline = time.monotonic() + START_TIMEOUT_S
                while not all(p.exists() for p in written_files(step.command, tmp_path)):
                    assert served.poll() is None and time.monotonic() < deadline, \
                        (tmp_path / "served.log").read_text()
                    time.sleep(0.1)
                continue
            status, printed = shell.run(step.command)
            assert status == 0, f"$ {step.command}\nexit {status}\n{printed}"
            if not matches(step.shown, printed):
                wrong.append(f"$ {step.command}\n--- the guide shows:\n"
                             + "\n".join(step.shown) + "\n--- it printed:\n" + printed)
    finally:
        if served is not None:
            stop_child(served)
    assert not wrong, "\n\n".join(wrong)


@pytest.mark.parametrize("title", [SECTION])
def test_the_walkthrough_section_exists(title: str) -> None:
    """The test has something to walk: the section and its console blocks."""
    assert BLOCK in section(GUIDE.read_text(), title)
