"""Long work (issue 27): Ctrl-C is acknowledged at once with what it waits for, a second
Ctrl-C aborts the running migrations through Nova; apply shows an ETA."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidator.store import journal
from consolidator.store.db import make_engine
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for, scenario
from tests.functional.waits import COMMAND_TIMEOUT_S, wait_until


@pytest.fixture
def crawling(tmp_path: Path) -> Iterator[Operator]:
    # 1024 MB at 4 MB/s: a migration would take over 4 minutes; only an abort ends it soon
    with served_cloud(scenario(bandwidth=4.0), tmp_path) as served:
        yield operator_for(served, tmp_path)


def test_ctrl_c_is_acknowledged_and_a_second_aborts_the_running_migrations(
        crawling: Operator) -> None:
    op = crawling
    plan = op.plan()
    engine = make_engine(op.db_url)
    before = op.where()
    proc = op.popen("apply", plan["id"], "--max-parallel", "2")
    def two_running() -> bool:
        assert proc.poll() is None, proc.communicate()
        return sum(e.action == "migrate" and e.state == journal.RUNNING
                   for e in journal.entries(engine, plan_id=plan["id"])) >= 2

    wait_until(two_running, "two migrations to run")
    assert proc.stderr is not None
    proc.send_signal(signal.SIGINT)
    seen = []
    while not any("Ctrl-C again" in line for line in seen):
        seen.append(proc.stderr.readline())
        assert seen[-1], "".join(seen)
    assert seen[-1].strip() == ("SIGINT: starting nothing new; waiting for 2 running "
                                "migrations; Ctrl-C again to abort them")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=COMMAND_TIMEOUT_S)
    err = "".join(seen) + err
    assert proc.returncode == 1, out + err
    assert "SIGINT again: aborting 2 running migrations through Nova" in err
    assert sum(line.endswith(": interrupted; aborted it through Nova")
               for line in err.splitlines()) == 2
    assert sum("interrupted; aborted it through Nova (migration" in line
               for line in out.splitlines()) == 2   # the summary's failed migrations
    rows = journal.entries(engine, plan_id=None)
    assert sum(e.action == "abort" and e.state == journal.SUCCEEDED for e in rows) == 2
    assert not [e for e in rows if e.state == journal.RUNNING]
    after = op.where()
    assert {k: v for k, v in after.items() if k.startswith("vm-")} == \
        {k: v for k, v in before.items() if k.startswith("vm-")}   # nothing moved
