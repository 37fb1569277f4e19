"""Waiting in tests: poll for the state a test needs, until a deadline a loaded machine meets.

A test never sleeps for a fixed time hoping that something has happened, and never reads a
state once right after an action that changes it: it polls until the state holds. The
deadlines only bound a failure. A wait ends as soon as its condition holds, so a long deadline
costs nothing when things work, and these are long enough for a load of 12 on 2 cores, where
a command that takes 2 s on an idle machine can take a minute.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: How long a wait for a condition may last before the test fails.
PATIENCE_S = 600.0
#: How long one consolidator command run as a subprocess may take (a whole apply or rollback).
COMMAND_TIMEOUT_S = 900.0


def wait_until(predicate: Callable[[], T], what: str, timeout: float = PATIENCE_S,
               interval: float = 0.1) -> T:
    """Poll predicate() until it returns something truthy, and return that; fail naming
    what was awaited once timeout seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def stopped(pid: int) -> bool:
    """Whether the process is stopped (a SIGSTOP has landed): its state in /proc is T."""
    return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("T")


def journal_row(engine: Any, action: str, target: str, state: str,
                plan_id: str | None = None) -> Any:
    """The newest journal row of action on target in state (of one plan), or None."""
    from consolidator.store import journal

    rows = journal.entries(engine) if plan_id is None else journal.entries(engine,
                                                                           plan_id=plan_id)
    found = [e for e in rows if e.action == action and e.target == target and e.state == state]
    return found[-1] if found else None


def wait_for_row(engine: Any, action: str, target: str, state: str = "running",
                 plan_id: str | None = None, timeout: float = PATIENCE_S) -> Any:
    """Wait for a journal row of action on target in state (running by default)."""
    return wait_until(lambda: journal_row(engine, action, target, state, plan_id),
                      f"a {state} {action} row for {target}", timeout, interval=0.05)


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """Kill a background process the test started, if it still runs, and reap it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=PATIENCE_S)
