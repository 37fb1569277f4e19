"""Issue 34: every log line reached journald at priority info. With $JOURNAL_STREAM naming
stderr (systemd sets it for a service), each line carries its sd-daemon <N> priority."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from consolidator.cli.logs import JournalFormatter, stderr_is_journal

PROGRAM = """
import logging, sys
from consolidator.cli.logs import configure_logging
configure_logging(1)
log = logging.getLogger("consolidator.daemon")
log.info("cycle done")
log.warning("capacity watch failed: x")
log.error("cycle failed after 1.0 s: two\\nlines")
"""


def run_with_stderr_to(path: Path, journal_stream: str | None,
                       argv: list[str] | None = None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    with path.open("w") as err:
        if journal_stream == "this file":
            info = os.fstat(err.fileno())
            env["JOURNAL_STREAM"] = f"{info.st_dev}:{info.st_ino}"
        elif journal_stream is not None:
            env["JOURNAL_STREAM"] = journal_stream
        subprocess.run(argv or [sys.executable, "-c", PROGRAM], stderr=err, env=env,
                       check=argv is None, timeout=120)
    return path.read_text().splitlines()


def test_records_carry_their_priority_when_stderr_is_the_journal(tmp_path: Path) -> None:
    lines = run_with_stderr_to(tmp_path / "err", "this file")
    assert lines == ["<6>INFO consolidator.daemon: cycle done",
                     "<4>WARNING consolidator.daemon: capacity watch failed: x",
                     "<3>ERROR consolidator.daemon: cycle failed after 1.0 s: two",
                     "<3>lines"]


def test_stderr_redirected_elsewhere_keeps_the_plain_format(tmp_path: Path) -> None:
    for stream in (None, "1:2"):       # no journal; or the journal, but not this stderr
        lines = run_with_stderr_to(tmp_path / "err", stream)
        assert len(lines) == 4 and not lines[0].startswith("<")
        assert " INFO consolidator.daemon: cycle done" in lines[0]


def test_the_formatter_maps_every_level() -> None:
    formatter = JournalFormatter("%(message)s")
    got = [formatter.format(logging.LogRecord("x", level, "f", 1, "m", None, None))
           for level in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR,
                         logging.CRITICAL)]
    assert got == ["<7>m", "<6>m", "<4>m", "<3>m", "<2>m"]
    assert not stderr_is_journal(sys.stderr, {})


def test_the_commands_one_line_error_is_an_error_in_the_journal(tmp_path: Path) -> None:
    """A daemon that cannot start (an unknown algorithm, a bad config) says why in one line
    on stderr: under systemd that line reached journald at priority info, so
    'journalctl -p err' did not show why the service failed."""
    argv = [sys.executable, "-m", "consolidator", "--db-url",
            f"sqlite:///{tmp_path / 'c.db'}", "plan", "--scenario", str(tmp_path / "none.yaml")]
    lines = run_with_stderr_to(tmp_path / "err", "this file", argv)
    assert len(lines) == 1 and lines[0].startswith("<3>consolidator: error: "), lines
    plain = run_with_stderr_to(tmp_path / "err", None, argv)
    assert plain == [lines[0].removeprefix("<3>")]
