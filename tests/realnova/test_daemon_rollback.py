"""Issue 23, point 5, on the real Nova and Placement: kill -9 an apply, 'rollback SNAP', then
'daemon --once'. The daemon re-ran the killed plan's migrations and powered its hosts off,
with auto_apply off, undoing the operator's rollback. Now the killed plan becomes interrupted,
nothing of it runs again, and the cloud stays as the rollback left it."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from consolidator.store import journal
from consolidator.store.db import make_engine
from tests.functional.lease_actor import expire_lease
from tests.functional.waits import PATIENCE_S
from tests.realnova.operator import operator_for
from tests.realnova.served import NovaView, served_nova


def scenario() -> dict[str, Any]:
    """Three hosts, a0-a1 on c1, b0-b1 on c2, d0 on c3: a plan empties c2 and c3."""
    hosts = [{"name": f"c{n}", "vcpus": 8, "memory_mb": 16384, "disk_gb": 200,
              "cpu_allocation_ratio": 2.0, "bmc": {"driver": "redfish"}} for n in (1, 2, 3)]
    where = {"a0": "c1", "a1": "c1", "b0": "c2", "b1": "c2", "d0": "c3"}
    instances = [{"name": name, "host": host, "vcpus": 1, "memory_mb": 1024, "disk_gb": 10}
                 for name, host in where.items()]
    return {"hosts": hosts, "instances": instances}


def test_the_daemon_does_not_undo_a_rollback_on_real_nova(tmp_path: Path) -> None:
    with served_nova(scenario(), tmp_path, migration_seconds=4.0) as served:
        op = operator_for(served, tmp_path)            # auto_apply = false
        nova = NovaView(served)
        snap = op.ok("snapshot").out.strip()
        at_start = nova.where()
        plan = op.plan("firstfit")
        assert plan["migrations"]
        engine = make_engine(op.db_url)
        proc = op.popen("apply", plan["id"], "--max-parallel", "1")
        nova.wait(lambda: any(e.action == "migrate" and e.state == journal.SUCCEEDED
                              for e in journal.entries(engine, plan_id=plan["id"])),
                  "the apply's first migration")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=PATIENCE_S)
        killed_rows = len(journal.entries(engine, plan_id=plan["id"]))
        # The killed apply's lease would linger until its TTL passed: expire it now.
        expire_lease(engine, "executor:realnova")
        op.ok("rollback", snap, "--yes")
        nova.wait(lambda: all(s == "ACTIVE" for s in nova.statuses().values()), "ACTIVE")
        assert nova.where() == at_start
        once = op("daemon", "--once")
        assert once.code == 0, once.out + once.err
        shown = json.loads(op.ok("plan", "show", plan["id"], "--format", "json").out)
        assert shown["status"] == "interrupted", shown
        assert "rollback" in shown["reason"] and "auto_apply" not in shown["reason"]
        assert "not resumed" in once.out + once.err
        assert len(journal.entries(engine, plan_id=plan["id"])) == killed_rows
        assert nova.where() == at_start
        assert set(nova.power().values()) == {"on"}
