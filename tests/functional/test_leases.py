"""Leases that cannot be held twice: the database's clock, generations and guards, on SQLite
and PostgreSQL, with real second processes whose clocks are skewed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import time_machine

from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.leases import (
    Guard,
    LeaseLostError,
    acquire,
    current,
    release,
)
from tests.conftest import migrated

ROOT = Path(__file__).resolve().parents[2]


def actor(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run tests.functional.lease_actor in a new process (its own clock and engine)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "tests.functional.lease_actor", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def pg_url(pg_database: str) -> str:
    return migrated(pg_database)


@pytest.mark.parametrize("holder_skew, taker_skew", [(0, 90), (-90, 0)],
                         ids=["taker-90s-ahead", "holder-90s-behind"])
@pytest.mark.parametrize("name", ["executor:alto", "daemon:alto"])
def test_a_skewed_clock_cannot_take_a_held_lease(pg_url: str, name: str, holder_skew: int,
                                                 taker_skew: int) -> None:
    """A holds a 60 s lease; B, whose clock differs from A's by 90 s, must not take it."""
    held = actor("--skew", str(holder_skew), "--ttl", "60", "acquire", pg_url, name,
                 "host-a:1:aaaa")
    assert held.stdout.strip() == "held"
    taken = actor("--skew", str(taker_skew), "--ttl", "60", "acquire", pg_url, name,
                  "host-b:2:bbbb")
    assert taken.stdout.strip() == "refused"
    again = actor("--skew", str(holder_skew), "--ttl", "60", "acquire", pg_url, name,
                  "host-a:1:aaaa")
    assert again.stdout.strip() == "held"          # the holder still renews it


def test_generations_guards_and_the_database_clock(db_url: str) -> None:
    """A generation changes only with the holder; a guard whose generation is gone, or whose
    lease expired by the database's clock, writes no journal row."""
    engine = make_engine(db_url)
    name = "executor:alto"
    a = acquire(engine, name, "host-a:1:aaaa", 0.5)
    assert a is not None and a.generation == 1
    renewed = acquire(engine, name, "host-a:1:aaaa", 60)
    assert renewed is not None and renewed.generation == 1
    assert journal.begin(engine, cloud="alto", plan_id=None, action="migrate", target="i-1",
                         guard=a) > 0
    with time_machine.travel(datetime.now(timezone.utc) + timedelta(seconds=90), tick=True):
        assert acquire(engine, name, "host-b:2:bbbb", 60) is None   # B's clock is not used
    assert current(engine, name).generation == 1
    assert a.renew(0.3)
    time.sleep(0.6)                                          # expired by the database clock
    assert current(engine, name) is None
    with pytest.raises(LeaseLostError):
        journal.begin(engine, cloud="alto", plan_id=None, action="migrate", target="i-2",
                      guard=Guard(engine, name, "host-a:1:aaaa", 1))
    b = acquire(engine, name, "host-b:2:bbbb", 60)
    assert b is not None and b.generation == 2
    assert acquire(engine, name, "host-a:1:aaaa", 60) is None
    assert not a.renew(60)
    with pytest.raises(LeaseLostError, match="generation 1"):
        journal.begin(engine, cloud="alto", plan_id=None, action="power_off", target="c3",
                      guard=Guard(engine, name, "host-a:1:aaaa", 1))
    assert [e.target for e in journal.entries(engine)] == ["i-1"]     # nothing written
    journal.record(engine, cloud="alto", plan_id=None, action="disable", target="c3",
                   state=journal.SUCCEEDED, result="ok", guard=b)
    rows = journal.entries(engine)
    assert [(e.lease_holder, e.lease_generation) for e in rows] == [
        ("host-a:1:aaaa", 1), ("host-b:2:bbbb", 2)]
    release(engine, name, "host-b:2:bbbb")
    assert current(engine, name) is None
    again = acquire(engine, name, "host-b:2:bbbb", 60)
    assert again is not None and again.generation == 3          # released: a new generation
    engine.dispose()
