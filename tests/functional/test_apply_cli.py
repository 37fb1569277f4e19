"""apply / hosts / rollback as an operator runs them: real subprocesses, a served fake cloud
with IPMI and Redfish BMCs in its own process, kill -9 and resume, two applies at once. The
operator's whole flow runs on each store: SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.leases import current
from tests.functional.cli import Result, run
from tests.functional.lease_actor import expire_lease
from tests.functional.served import ServedCloud, served_cloud
from tests.functional.waits import COMMAND_TIMEOUT_S, PATIENCE_S, stop_process, wait_until

pytestmark = pytest.mark.slow

#: The executor lease of these tests' config.
LEASE_TTL_S = 120.0


def scenario(bandwidth: float) -> dict:
    """Four hosts, two IPMI and two Redfish BMCs; firstfit empties c3 and c4."""
    hosts = [{"name": f"c{n}", "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
              "bmc": {"driver": "ipmi" if n % 2 else "redfish"}} for n in range(1, 5)]
    instances = [{"name": f"vm-{h}-{k}", "host": f"c{h}", "vcpus": 2, "memory_mb": 1024,
                  "disk_gb": 20} for h in range(1, 5) for k in range(3)]
    return {"hosts": hosts, "instances": instances,
            "settings": {"migration_bandwidth_mb_s": bandwidth, "service_up_delay_s": 0.2,
                         "bmc_graceful_delay_s": 0.1}}


@dataclass
class Operator:
    """Runs consolidator commands against the served cloud with one config and database."""

    served: ServedCloud
    db_url: str
    config: Path

    def __call__(self, *args: str) -> Result:
        env = {"OS_CLIENT_CONFIG_FILE": str(self.served.clouds_yaml),
               "CONSOLIDATOR_BMC_FILE": str(self.served.bmc_yaml)}
        return run("--config", str(self.config), "--cloud", self.served.cloud_name, *args,
                   db_url=self.db_url, env=env)

    def popen(self, *args: str) -> subprocess.Popen:
        env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(self.served.clouds_yaml),
               "CONSOLIDATOR_BMC_FILE": str(self.served.bmc_yaml),
               "CONSOLIDATOR_DB_URL": self.db_url}
        return subprocess.Popen([sys.executable, "-m", "consolidator", "--config",
                                 str(self.config), "--cloud", self.served.cloud_name, *args],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def plan(self) -> dict:
        result = self("plan", "-a", "firstfit", "--format", "json")
        assert result.code == 0, result.err
        plan = json.loads(result.out)
        assert self("plan", "approve", plan["id"]).code == 0
        return plan

    def where(self) -> dict[str, str]:
        """Instance name -> host, and host -> power, from the fake cloud's own state."""
        state = self.served.state()
        out = {name: s["host"] for name, s in state["servers"].items()}
        out.update({f"power:{name}": h["power"] for name, h in state["hosts"].items()})
        return out


def operator_for(served: ServedCloud, tmp_path: Path, db_url: str | None = None) -> Operator:
    """An operator of the served cloud, on db_url (default: SQLite in tmp_path), migrated."""
    config = tmp_path / "consolidator.conf"
    # A tight packing (no host kept for N+1): these tests are about running plans. The lease
    # outlives any pause a loaded machine makes; a test that needs it gone expires it.
    config.write_text(f"[executor]\npoll_interval = 0.05\npower_timeout = {PATIENCE_S:g}\n"
                      f"lease_ttl = {LEASE_TTL_S:g}\n[planner]\nn_plus_one = false\n")
    db_url = db_url or f"sqlite:///{tmp_path / 'c.db'}"
    op = Operator(served=served, db_url=db_url, config=config)
    assert op("db", "upgrade").code == 0
    return op


@pytest.fixture
def fast(tmp_path: Path, empty_db_url: str) -> Iterator[Operator]:
    """The operator of a cloud whose migrations are quick, on SQLite, PostgreSQL and
    MariaDB."""
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        yield operator_for(served, tmp_path, empty_db_url)


def test_snapshot_plan_apply_hosts_rollback(fast: Operator) -> None:
    snap = fast("snapshot")
    assert snap.code == 0, snap.err
    before = fast.where()
    plan = fast.plan()
    assert set(plan["power_off"]) == {"c3", "c4"}
    applied = fast("apply", plan["id"])
    assert applied.code == 0, applied.out + applied.err
    after = fast.where()
    assert after["power:c3"] == after["power:c4"] == "off"
    assert {h for n, h in after.items() if not n.startswith("power:")} == {"c1", "c2"}
    listed = fast("hosts", "list", "--format", "json")
    assert listed.code == 0, listed.err
    power = {h["host"]: h["power"] for h in json.loads(listed.out)}
    assert power["c3"] == "off" and power["c4"] == "off" and power["c1"] == "on"
    unforced = fast("hosts", "power", "off", "c1", "--yes")
    assert unforced.code == 2 and "needs --force" in unforced.err
    refused = fast("hosts", "power", "off", "c1", "--yes", "--force")
    assert refused.code == 1 and "servers are still on it" in refused.err
    back = fast("rollback", snap.out.strip(), "--yes")
    assert back.code == 0, back.out + back.err
    assert fast.where() == before
    again = fast("rollback", snap.out.strip(), "--yes")
    assert again.code == 0 and "nothing to do" in again.out
    shown = fast("journal", "--plan", plan["id"])
    assert "power_off" in shown.out and "succeeded" in shown.out


def test_unapproved_plan_is_refused_without_yes(fast: Operator) -> None:
    result = fast("plan", "-a", "firstfit", "--format", "json")
    plan = json.loads(result.out)
    refused = fast("apply", plan["id"])
    assert refused.code == 2 and "not approved" in refused.err
    assert fast.where()["power:c3"] == "on"


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[Operator]:
    # 1024 MB at 1024 MB/s: each migration takes about a second.
    with served_cloud(scenario(bandwidth=1024.0), tmp_path) as served:
        yield operator_for(served, tmp_path)


def apply_until_one_migrated(op: Operator) -> tuple[dict, object, subprocess.Popen]:
    """Start apply on a new approved plan in the background; return once one migration is
    done: (plan, engine, process)."""
    plan = op.plan()
    engine = make_engine(op.db_url)
    proc = op.popen("apply", plan["id"], "--max-parallel", "1")
    wait_until(lambda: any(e.state == journal.SUCCEEDED and e.action == "migrate"
                           for e in journal.entries(engine, plan_id=plan["id"])),
               "the first migration to succeed")
    return plan, engine, proc


def test_kill_9_then_resume(slow: Operator) -> None:
    plan, engine, proc = apply_until_one_migrated(slow)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=PATIENCE_S)
    assert any(e.state == journal.RUNNING for e in journal.entries(engine, plan_id=plan["id"])) \
        or len(journal.entries(engine, plan_id=plan["id"])) < len(plan["migrations"])
    # The killed holder keeps its lease until it expires (holders are random tokens, judged
    # only by the lease's expiry on the database's clock): a resume is refused until then.
    early = slow("apply", plan["id"], "--resume")
    assert early.code == 1 and "already running" in early.err, early.out + early.err
    assert current(engine, "executor:fake") is not None
    expire_lease(engine, "executor:fake")              # as its TTL passing would
    resumed = slow("apply", plan["id"], "--resume")
    assert resumed.code == 0, resumed.out + resumed.err
    assert "resume:" in resumed.err
    rows = journal.entries(engine, plan_id=plan["id"])
    assert not [e for e in rows if e.state == journal.RUNNING]
    where = slow.where()
    for move in plan["migrations"]:
        assert where[move["instance_name"]] == move["destination"]
    assert where["power:c3"] == where["power:c4"] == "off"
    assert json.loads(slow("plan", "show", plan["id"], "--format", "json").out)["status"] == \
        "succeeded"


def test_sigterm_stops_cleanly_then_resume_finishes(slow: Operator) -> None:
    plan, engine, proc = apply_until_one_migrated(slow)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=COMMAND_TIMEOUT_S)
    assert proc.returncode == 1, out + err
    assert "SIGTERM: starting nothing new" in err and "migrated" in out
    rows = journal.entries(engine, plan_id=plan["id"])
    assert rows and not [e for e in rows if e.state == journal.RUNNING]
    stored = json.loads(slow("plan", "show", plan["id"], "--format", "json").out)
    assert stored["status"] == "failed" and "interrupted" in stored["reason"]
    where = slow.where()
    assert where["power:c3"] == "on" or not [n for n, h in where.items() if h == "c3"]
    resumed = slow("apply", plan["id"], "--resume")
    assert resumed.code == 0, resumed.out + resumed.err
    assert slow.where()["power:c4"] == "off"


def running_migrations(op: Operator) -> list[dict]:
    """The live migrations the fake cloud runs now."""
    return [m for m in op.served.state()["migrations"] if m["status"] == "running"]


def force_complete_running(op: Operator) -> None:
    """Force-complete every live migration the fake cloud runs (as an operator would), after
    clearing the faults that hung them."""
    op.served.clear_faults()
    conn = op.served.connect()
    for mig in running_migrations(op):
        conn.compute.post(f"/servers/{mig['server_id']}/migrations/{mig['id']}/action",
                          json={"force_complete": None}, microversion="2.22")


def test_two_applies_at_once(slow: Operator) -> None:
    """The first apply's first migration hangs until the second apply has been refused."""
    first = slow.plan()
    slow.served.add_fault([{"type": "migration_hangs", "instance": m["instance_name"],
                            "count": 1} for m in first["migrations"]])
    engine = make_engine(slow.db_url)
    proc = slow.popen("apply", first["id"], "--max-parallel", "1")
    try:
        wait_until(lambda: journal.entries(engine, plan_id=first["id"]),
                   "the first apply to start")
        second = slow.plan()
        refused = slow("apply", second["id"])
        assert refused.code == 1
        assert "already running" in refused.err and "holds lease" in refused.err
        wait_until(lambda: running_migrations(slow), "the first migration to run")
        force_complete_running(slow)
        out, err = proc.communicate(timeout=COMMAND_TIMEOUT_S)
    finally:
        stop_process(proc)
    assert proc.returncode == 0, out + err


def test_a_rollback_plan_shows_running_while_it_runs(slow: Operator) -> None:
    """Issue 15: a rollback plan reads 'running' in 'plans list' while it moves instances
    back, and 'succeeded' once it is done, like any plan. Its first migration hangs in the
    fake cloud until 'plans list' has been read, then is force-completed, as an operator
    would."""
    snap = slow("snapshot").out.strip()
    plan = slow.plan()
    assert slow("apply", plan["id"]).code == 0
    slow.served.add_fault([{"type": "migration_hangs", "instance": m["instance_name"],
                            "count": 1} for m in plan["migrations"]])
    proc = slow.popen("rollback", snap, "--yes", "--max-parallel", "1")

    def rollback_plan() -> dict | None:
        listed = json.loads(slow("plans", "list", "--format", "json").out)
        return next((p for p in listed if p["algorithm"] == "rollback"), None)

    try:
        wait_until(lambda: running_migrations(slow), "the rollback's first migration to run")
        during = rollback_plan()
        force_complete_running(slow)
        out, err = proc.communicate(timeout=COMMAND_TIMEOUT_S)
    finally:
        stop_process(proc)
    assert proc.returncode == 0, out + err
    assert during is not None and during["status"] == "running", during
    assert rollback_plan()["status"] == "succeeded"
    assert f"rollback plan {during['id']} succeeded" in out + err
