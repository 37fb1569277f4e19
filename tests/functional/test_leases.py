"""Leases that cannot be held twice: the database's clock, generations and guards, on SQLite
and PostgreSQL, with real second processes whose clocks are skewed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
