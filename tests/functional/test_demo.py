"""consolidator demo as a newcomer runs it: a real subprocess, the whole story, verified."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.functional.cli import run

STEPS = [
    "1. Start the fake cloud and its emulated BMCs",
    "2. Prepare the database (db upgrade)",
    "3. Snapshot the cloud",
    "4. Plan",
    "5. Approve the plan",
    "6. Apply: live-migrate, disable and power off the emptied hosts",
    "7. The hosts powered off, asked of their BMCs over IPMI and Redfish",
    "8. The estimated saving",
    "9. consolidator hosts list",
    "10. Roll back to the snapshot",
    "11. Final check: every instance back home, every host on",
]


@pytest.mark.slow
def test_demo_runs_the_whole_story_and_verifies_it(tmp_path: Path) -> None:
    result = run("demo", cwd=tmp_path)
    assert result.code == 0, result.out[-3000:] + result.err
    for step in STEPS:
        assert f"\n{step}\n" in result.out, step
    assert result.out.count("-> verified") == len(STEPS)
    assert "VCPU USED (BEFORE -> AFTER)" in result.out          # the plan table with bars
    assert "migrate vm-" in result.out and "done vm-" in result.out  # live progress
    assert re.search(r"compute-\d+ +ipmi .* off\n", result.out)
    assert re.search(r"compute-\d+ +redfish .* off\n", result.out)
    assert "kWh a day" in result.out
    assert "HOST        SERVICE        POWER" in result.out      # the hosts list table
    assert "instances are on the host the snapshot recorded them on" in result.out
    assert "hosts are powered on" in result.out
    # It says how long it took; how long that may be is no test's business (a loaded machine
    # runs it several times slower than an idle one).
    assert re.search(r"every step passed in [\d.]+ s", result.out), result.out[-500:]
    assert not list(tmp_path.iterdir()), "the demo wrote into the current directory"


def test_a_failed_step_is_one_line_naming_it_and_keep_keeps_the_files(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    result = run("--db-url", f"sqlite:///{blocker}/demo.db", "demo", "--keep")
    assert result.code == 1, result.out + result.err
    errors = result.err.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith(
        "consolidator: error: demo failed at step 2 (Prepare the database"), result.err
    kept = Path(re.search(r"^kept (\S+):", result.out, re.M).group(1))
    try:
        assert (kept / "clouds.yaml").exists() and (kept / "bmc.yaml").exists()
        assert (kept / "bmc.yaml").stat().st_mode & 0o077 == 0
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_an_unknown_algorithm_is_a_usage_error_before_anything_starts() -> None:
    result = run("demo", "--algorithm", "no-such-thing")
    assert result.code == 2, result.out + result.err
    assert "no-such-thing" in result.err and "1. Start" not in result.out
