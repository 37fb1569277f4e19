"""Row locks on PostgreSQL and MariaDB: an actor paused inside a transaction (SIGSTOP, a
frozen VM) does not stall every other actor, and a wait for a lock ends with a message.

Found by the long randomized run of issue 45 on PostgreSQL: an apply was SIGSTOPped inside
its lease's fence (a transaction holding the lease row); the next command's write of that row
waited on the lock for ever, and the run hung.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from consolidator.core.errors import StoreError
from consolidator.store import sessions
from consolidator.store.db import make_engine
from consolidator.store.leases import Guard, acquire, current
from tests.functional.waits import PATIENCE_S, stopped, wait_until

ROOT = Path(__file__).resolve().parents[2]

#: A holder of the lease that pauses itself inside its fence, then tries to go on.
_PAUSED_IN_ITS_FENCE = """
import os, signal, sys
from sqlalchemy import text
from consolidator.core.errors import ConsolidatorError
from consolidator.store import sessions
sessions.IDLE_TRANSACTION_SECONDS = float(sys.argv[3])
from consolidator.store.db import make_engine, translate_errors
from consolidator.store.leases import acquire
engine = make_engine(sys.argv[1])
guard = acquire(engine, sys.argv[2], "holder-paused", 1.0)
try:
    with translate_errors(engine), engine.begin() as conn:
        guard.check(conn)
        print("fenced", flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)     # paused inside its fence, as SIGSTOP may land
        conn.execute(text("SELECT 1"))
except ConsolidatorError as exc:
    print(f"error: {exc}", flush=True)
    sys.exit(1)
print("committed", flush=True)
"""


def _pause_in_fence(url: str, name: str, idle_seconds: float) -> subprocess.Popen[str]:
    """Start the holder; return it once it is stopped inside its fence."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, "-c", _PAUSED_IN_ITS_FENCE, url, name,
                             str(idle_seconds)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: proc.poll() is not None or stopped(proc.pid),
               "the holder to pause inside its fence")
    assert proc.poll() is None, proc.communicate()
    return proc


def _take_over(url: str, name: str) -> object:
    """Once the paused holder's lease expired, take it as the next actor would, in a thread
    (a wait for ever fails the test): the Guard, or the exception raised."""
    engine = make_engine(url)
    wait_until(lambda: current(engine, name) is None, "the paused holder's lease to expire")
    out: list[object] = []

    def take() -> None:
        try:
            out.append(acquire(engine, name, "holder-next", 60.0))
        except Exception as exc:  # noqa: BLE001 - the test reads it
            out.append(exc)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    thread.join(PATIENCE_S)
    assert not thread.is_alive(), "the next actor still waits on the paused one's lock"
    return out[0]


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=PATIENCE_S)
    return proc.returncode, out + err


def test_an_actor_paused_inside_its_fence_does_not_stall_the_next_one(
        server_db_url: str) -> None:
    """The server ends the paused holder's transaction (its locks with it) once it stood
    idle for IDLE_TRANSACTION_SECONDS; the next actor takes the expired lease, and the
    holder, resumed, is told its transaction was ended and to run the command again."""
    name = "executor:paused"
    holder = _pause_in_fence(server_db_url, name, idle_seconds=2.0)
    try:
        taken = _take_over(server_db_url, name)
        assert isinstance(taken, Guard), taken
        assert taken.generation == 2
    finally:
        code, said = _finish(holder)
    assert code == 1, said
    assert "idle" in said and "paused" in said and "run the command again" in said, said
    assert "Traceback" not in said
    lease = current(make_engine(server_db_url), name)
    assert lease is not None and lease.holder == "holder-next"


def test_a_wait_for_a_held_lock_ends_with_a_message(
        server_db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement that waits LOCK_WAIT_SECONDS for another transaction's lock fails with
    one line that says so and how to find the holder; the holder then commits."""
    name = "executor:held"
    holder = _pause_in_fence(server_db_url, name, idle_seconds=PATIENCE_S)
    try:
        monkeypatch.setattr(sessions, "LOCK_WAIT_SECONDS", 2)
        refused = _take_over(server_db_url, name)
        assert isinstance(refused, StoreError), refused
        said = str(refused)
        assert "waited 2 s for a lock" in said and "another process" in said, said
        assert "\n" not in said
    finally:
        code, told = _finish(holder)
    assert code == 0 and "committed" in told, told
    lease = current(make_engine(server_db_url), name)
    assert lease is None or lease.holder == "holder-paused"
