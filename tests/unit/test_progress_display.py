"""The live progress display of apply and rollback: redrawn lines on a terminal, plain lines
(one per quarter of a migration's memory) elsewhere."""

from __future__ import annotations

import io

from consolidator.execution.progress import DONE, RUNNING, STARTED, MigrationProgress, poll_delays
from consolidator.render.progress import ProgressDisplay

GIB = 1024 ** 3


def event(phase: str, copied: float, name: str = "vm-1") -> MigrationProgress:
    return MigrationProgress(name, "c3", "c1", phase, 1.0, 4 * GIB, int(copied * GIB),
                             int((4 - copied) * GIB))


def feed(display: ProgressDisplay) -> None:
    display.event(event(STARTED, 0))
    for copied in (0.5, 0.7, 1.2, 2.0, 2.2, 3.5):
        display.event(event(RUNNING, copied))
    display.event(event(DONE, 4))


def test_plain_lines_off_a_terminal() -> None:
    out = io.StringIO()
    display = ProgressDisplay(out, tty=False)
    report = display.wrap(lambda line: out.write(line + "\n"))
    report("wave 1: starting")
    feed(display)
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text
    lines = text.splitlines()
    assert lines[0] == "wave 1: starting"
    # One line as each quarter is reached (25 %, 50 %, 75 %), with the counters.
    assert [line.split("] ")[1].split("%")[0].strip() for line in lines[1:]] == \
        ["30", "50", "88"]
    assert "1.2/4.0 GiB" in lines[1] and lines[1].startswith("  vm-1 c3 -> c1 [")


def test_a_terminal_gets_one_redrawn_line_per_running_migration() -> None:
    out = io.StringIO()
    display = ProgressDisplay(out, tty=True)
    display.event(event(RUNNING, 1.0, "vm-1"))
    display.event(event(RUNNING, 2.0, "vm-2"))
    assert display.drawn == 2
    display.wrap(lambda line: out.write(line + "\n"))("  done vm-0")
    display.event(event(DONE, 4.0, "vm-1"))
    assert display.drawn == 1
    display.close()
    text = out.getvalue()
    assert "\x1b[2F\x1b[J" in text and "  done vm-0\n" in text
    assert text.rstrip("\n").endswith("\x1b[1F\x1b[J")


def test_poll_delays_double_from_the_first_to_the_cap() -> None:
    delays = poll_delays(0.1, 2.0)
    assert [next(delays) for _ in range(7)] == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]


def test_apply_gives_an_eta_from_the_rate_so_far() -> None:
    """apply showed no ETA: each wave line now says about how long is left."""
    from consolidator.execution.move_runner import eta

    assert eta(elapsed=40.0, done=8, left=24) == ", about 2 min 0 s left"
    assert eta(elapsed=3.0, done=0, left=82) == ""      # nothing done yet: no rate
    assert eta(elapsed=30.0, done=82, left=0) == ""
