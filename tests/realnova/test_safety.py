"""The safety defects of issues 14 and 17, replayed on the real Nova and Placement.

Each test serves a cloud of its own and sets up the state it needs, so that pytest-xdist may
run them in any order, on any worker: hypervisors c1.example.org, c2.example.org and
c3.example.org (the fake driver's node names) whose nova-compute services are c1, c2 and c3,
as in many clouds. a0-a2 live on c1, b0 on c2 and d0 on c3, so a plan empties c2 and c3 into
c1. Nova notices a stopped nova-compute only after an hour here (service_down_time), so a
powered-off host whose service is not forced down still reads "up", as in the first minute of
a real power cut, however slowly a loaded machine runs the test.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from consolidator.openstack.nova import Nova
from consolidator.store import journal
from consolidator.store.db import make_engine
from tests.functional.cli import run
from tests.functional.lease_actor import expire_lease
from tests.functional.waits import PATIENCE_S, stop_process
from tests.realnova.operator import Operator, operator_for
from tests.realnova.served import NovaView, served_nova

ROOT = Path(__file__).resolve().parents[2]
HOSTS = {"c1": "c1.example.org", "c2": "c2.example.org", "c3": "c3.example.org"}
#: The destructive journal actions (each precedes a call that changes the cloud).
DESTRUCTIVE = {"migrate", "disable", "enable", "power_on", "power_off", "force_down",
               "abort", "force_complete"}
#: Longer than any test: Nova reports a stopped nova-compute up until it is forced down.
SERVICE_DOWN_TIME_S = 3600


def scenario() -> dict[str, Any]:
    """Three hosts named by FQDN with short service hosts; a0-a2 on c1, b0 on c2, d0 on c3."""
    drivers = {"c1": "redfish", "c2": "ipmi", "c3": "redfish"}
    hosts = [{"name": fqdn, "compute_host": short, "vcpus": 8, "memory_mb": 16384,
              "disk_gb": 200, "cpu_allocation_ratio": 2.0, "bmc": {"driver": drivers[short]}}
             for short, fqdn in HOSTS.items()]
    where = {"a0": "c1", "a1": "c1", "a2": "c1", "b0": "c2", "d0": "c3"}
    instances = [{"name": name, "host": HOSTS[short], "vcpus": 1, "memory_mb": 1024,
                  "disk_gb": 10} for name, short in where.items()]
    return {"hosts": hosts, "instances": instances}


@dataclass
class Story:
    """The served cloud, the operator, and the snapshot taken before anything moved."""

    op: Operator
    nova: NovaView
    tmp: Path
    first: str

    @property
    def engine(self) -> Any:
        """The operator's database."""
        return make_engine(self.op.db_url)

    def at_start(self) -> dict[str, str]:
        """Where every server was in the first snapshot (name -> service host)."""
        snap = json.loads(self.op.ok("snapshots", "show", self.first, "--format", "json").out)
        short = {fqdn: s for s, fqdn in HOSTS.items()}
        return {i["name"]: short[i["host"]] for i in snap["instances"]}

    def fence_lifted(self, host: str) -> None:
        """Clear the forced-down mark consolidator set on a powered-off host: Nova then
        reports it up until service_down_time passes, as after a power-off it did not see."""
        Nova(self.nova.conn).force_down(host, False)


    def consolidate(self) -> dict[str, Any]:
        """Plan and apply: b0 and d0 move to c1, and c2 and c3 are powered off."""
        plan = self.op.plan()
        assert sorted(plan["power_off"]) == ["c2.example.org", "c3.example.org"], plan
        self.op.ok("apply", plan["id"])
        assert self.nova.power() == {"c1.example.org": "on", "c2.example.org": "off",
                                     "c3.example.org": "off"}
        return plan


@pytest.fixture
def story(tmp_path: Path) -> Iterator[Story]:
    """A cloud of its own for each test, and the snapshot taken before anything moved."""
    with served_nova(scenario(), tmp_path, service_down_time=SERVICE_DOWN_TIME_S) as served:
        op = operator_for(served, tmp_path)
        yield Story(op=op, nova=NovaView(served), tmp=tmp_path,
                    first=op.ok("snapshot").out.strip())


def rows_of(story: Story, plan_id: str) -> list[tuple[str, str, str]]:
    """(action, target, state) of a plan's journal."""
    return [(e.action, e.target, e.state) for e in journal.entries(story.engine, plan_id=plan_id)]


def test_hosts_power_off_by_either_name_refuses_a_host_with_work(story: Story) -> None:
    """Issue 14, defect 1: the BMC file's name (the hypervisor's, c1.example.org) went into
    Nova's host filter, which takes the service host (c1), found no server and cut the
    power. Both names must mean the host, and its three ACTIVE servers keep it on."""
    for name in ("c1.example.org", "c1"):
        refused = story.op("hosts", "power", "off", name, "--yes", "--force")
        assert refused.code == 1, refused.out + refused.err
        assert "refusing to power off c1.example.org: 3 servers are still on it" in \
            refused.err
        assert story.nova.power()["c1.example.org"] == "on"
    assert story.nova.services()["c1"].status == "enabled"
    assert not [e for e in journal.entries(story.engine) if e.action == "power_off"
                and e.state == journal.SUCCEEDED]


def test_no_power_off_while_a_live_migration_runs_into_the_host(story: Story) -> None:
    """Issue 14, defect 2: during a live migration Nova keeps the instance on its source, so
    c3 looked empty while a0 was still arriving. c3 must stay on, and enabled."""
    op, nova = story.op, story.nova
    plan = op.plan()
    assert sorted(plan["power_off"]) == ["c2.example.org", "c3.example.org"], plan
    nova.served.add_fault({"type": "migration_hangs", "instance": "a0"})
    a0 = nova.servers()["a0"]
    Nova(nova.conn).live_migrate(a0.id, "c3")
    nova.wait(lambda: [m.status for m in nova.migrations(a0.id)][:1] == ["running"],
              "Nova to run a0's migration into c3")
    applied = op("apply", plan["id"])
    assert applied.code == 1, applied.out + applied.err
    assert "unfinished migrations" in applied.out and "into it" in applied.out
    assert nova.power() == {"c1.example.org": "on", "c2.example.org": "off",
                            "c3.example.org": "on"}
    assert nova.services()["c3"].status == "enabled"
    rows = rows_of(story, plan["id"])
    assert ("power_off", "c3.example.org", journal.SUCCEEDED) not in rows
    assert ("power_off", "c3.example.org", journal.SKIPPED) in rows
    # End a0's migration the way an operator would: abort it; a0 stays on c1.
    record = nova.migrations(a0.id)[0]
    nova.conn.compute.delete(f"/servers/{a0.id}/migrations/{record.id}", microversion="2.24")
    nova.wait(lambda: nova.migrations(a0.id)[0].status == "cancelled", "the abort")
    nova.served.clear_faults()
    assert (nova.servers()["a0"].compute_host, nova.servers()["a0"].status) == ("c1", "ACTIVE")


def test_rollback_powers_on_through_the_bmc_while_nova_reports_up(story: Story) -> None:
    """Issue 17, defect 1: c2 is off (its BMC says so), but Nova still reports its
    nova-compute up. Rollback must power it on through the BMC, wait for a heartbeat after
    that, enable it, move b0 back, and count only the power-on it made and verified."""
    op, nova = story.op, story.nova
    story.consolidate()
    op.ok("hosts", "power", "on", "c3")            # c3 on, enabled and empty: d0 goes back
    assert nova.power()["c3.example.org"] == "on"
    story.fence_lifted("c2")
    assert nova.power()["c2.example.org"] == "off"
    assert nova.services()["c2"].state == "up"
    # 10-15 s when it works; without the fix it sends b0 to a stopped compute and never ends.
    back = op("rollback", story.first, "--yes")
    assert back.code == 0, back.out + back.err
    assert re.search(r"^powered on +1$", back.out, re.M), back.out     # verified, counted once
    plans = json.loads(op.ok("plans", "list", "--format", "json").out)
    rollback = next(p for p in plans if p["algorithm"] == "rollback")
    rows = journal.entries(story.engine, plan_id=rollback["id"])
    power = [(e.action, e.target, e.state) for e in rows if e.action.startswith("power")]
    assert power == [("power_on", "c2.example.org", journal.SUCCEEDED)]
    assert "nova-compute up" in next(e.result for e in rows if e.action == "power_on")
    assert nova.power() == dict.fromkeys(HOSTS.values(), "on")
    assert {h: (s.status, s.state) for h, s in nova.services().items()} == \
        dict.fromkeys(HOSTS, ("enabled", "up"))
    assert nova.where() == story.at_start()
    assert set(nova.statuses().values()) == {"ACTIVE"}


def lease_actor(story: Story, plan_id: str, *args: str, after: tuple[str, ...] = ()
                ) -> subprocess.Popen[str]:
    """An executor process of its own (tests.functional.lease_actor) for the served cloud;
    args go before 'execute' (--skew, --ttl), after behind it (--resume, --wait...)."""
    entry = yaml.safe_load(story.op.served.clouds_yaml.read_text())["clouds"]["realnova"]
    clouds = story.tmp / "actor-clouds.yaml"
    clouds.write_text(yaml.safe_dump({"clouds": {"fake": entry}}))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.functional.lease_actor", *args, "execute",
         story.op.db_url, plan_id, str(clouds), str(story.op.served.bmc_yaml), *after],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_no_destructive_call_without_the_current_lease(story: Story) -> None:
    """Issue 14, defect 3, two ways. A runs the plan; its first live migration hangs in
    Nova. A freezes there (SIGSTOP, as a VM pause or a long GC) while its lease is still
    held, and B, whose clock runs two minutes ahead, tries: it once took the held lease; now
    it is refused and makes no call. The migration completes, and A's lease expires by the
    database's clock (the test expires it rather than sleeping through the TTL); C takes the
    lease, resumes and finishes the plan; A, thawed, must make no further call. Every
    destructive call Nova saw has its journal row, under the lease generation current when
    it was written."""
    from tests.realnova.test_faults import first_migration_copying

    op, nova = story.op, story.nova
    plan = op.plan()
    ids = {n: s.id for n, s in nova.servers().items()}
    seen = {m.id for n in ids for m in nova.migrations(ids[n])}
    nova.served.add_fault([{"type": "migration_hangs", "instance": m["instance_name"],
                            "count": 1} for m in plan["migrations"]])
    # A's lease (60 s, renewed) is held whenever B tries, however slowly B starts.
    first = lease_actor(story, plan["id"], "--ttl", "60", after=("--max-parallel", "1"))
    procs = [first]
    try:
        moving = first_migration_copying(nova, story.engine, plan["id"])
        first.send_signal(signal.SIGSTOP)
        ahead = lease_actor(story, plan["id"], "--skew", "120", "--ttl", "60")
        procs.append(ahead)
        out_b, err_b = ahead.communicate(timeout=PATIENCE_S)
        nova.served.clear_faults()
        nova.force_complete(moving)
        expire_lease(story.engine, "executor:realnova")
        taker = lease_actor(story, plan["id"], "--ttl", "60",
                            after=("--resume", "--wait", str(PATIENCE_S), "--max-parallel",
                                   "1"))
        procs.append(taker)
        out_c, err_c = taker.communicate(timeout=PATIENCE_S)
        first.send_signal(signal.SIGCONT)
        out_a, err_a = first.communicate(timeout=PATIENCE_S)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
            stop_process(proc)
    assert ahead.returncode != 0 and out_b == "", out_b + err_b
    assert "LeaseHeldError" in err_b, err_b
    assert first.returncode == 0 and taker.returncode == 0, err_a + err_c
    ran_a, ran_c = json.loads(out_a), json.loads(out_c)
    assert ran_a["interrupted"] and not ran_a["powered_off"], ran_a
    assert "lost the executor lease" in err_a
    assert not ran_c["interrupted"] and sorted(ran_c["powered_off"]) == \
        sorted(plan["power_off"]), ran_c
    rows = [e for e in journal.entries(story.engine, plan_id=plan["id"])
            if e.action in DESTRUCTIVE and e.state != journal.SKIPPED]
    by_a = [e for e in rows if e.lease_holder == ran_a["holder"]]
    by_c = [e for e in rows if e.lease_holder == ran_c["holder"]]
    assert len(by_a) + len(by_c) == len(rows)               # B wrote nothing
    assert [e.action for e in by_a] == ["migrate"]          # only before the freeze
    assert max(e.id for e in by_a) < min(e.id for e in by_c)
    assert max(e.lease_generation for e in by_a) < min(e.lease_generation for e in by_c)
    for move in plan["migrations"]:
        records = [m for m in nova.migrations(ids[move["instance_name"]]) if m.id not in seen]
        assert [m.status for m in records] == ["completed"]             # one POST each
    assert sum(e.action == "migrate" for e in rows) == len(plan["migrations"])
    assert sorted(e.target for e in rows if e.action == "power_off") == \
        sorted(plan["power_off"])
    assert all(nova.power()[h] == "off" for h in plan["power_off"])


def test_rollback_leaves_a_host_the_operator_disabled_alone(story: Story) -> None:
    """Issue 14, defect 4: a host consolidator powered off, then disabled by an operator for
    "DIMM errors", was powered on, enabled and given instances back by rollback."""
    op, nova = story.op, story.nova
    story.consolidate()
    Nova(nova.conn).set_service("c3", enabled=False, reason="DIMM errors")
    back = op("rollback", story.first, "--yes")
    assert back.code == 0, back.out + back.err
    assert "DIMM errors" in back.out + back.err
    assert nova.power()["c3.example.org"] == "off"
    c3 = nova.services()["c3"]
    assert (c3.status, c3.disabled_reason) == ("disabled", "DIMM errors")
    where = nova.where()
    assert "c3" not in where.values()
    assert where["d0"] == "c1"                                # not moved onto c3
    assert where["b0"] == "c2" and nova.power()["c2.example.org"] == "on"
    assert nova.services()["c2"].status == "enabled"


def test_a_host_without_a_bmc_is_neither_emptied_nor_powered_off(story: Story) -> None:
    """Issue 17, defect 2: the plan listed 'power off' for a host the BMC file does not
    list; apply made every migration, then failed. Issue 27: such a host stays on anyway, so
    the plan no longer empties it for nothing either. b0 stays on c2, the plan says why, and
    apply agrees: exit 0, c2 untouched, on and enabled."""
    op, nova = story.op, story.nova
    bmcs = yaml.safe_load(op.served.bmc_yaml.read_text())
    bmcs["hosts"].pop("c2.example.org")
    partial = story.tmp / "bmc-without-c2.yaml"
    partial.write_text(yaml.safe_dump(bmcs))
    partial.chmod(0o600)
    def without_c2(*args: str) -> Any:
        """A command run with the BMC file that does not list c2 (the configured one)."""
        return run("--config", str(op.config), "--cloud", op.served.cloud_name, *args,
                   db_url=op.db_url, env={**op.env, "CONSOLIDATOR_BMC_FILE": str(partial)})

    assert nova.where()["b0"] == "c2"
    plan = json.loads(without_c2("plan", "-a", "zoned-bestfit", "--format", "json").out)
    assert not [m for m in plan["migrations"]
                if m["instance_name"] == "b0" or "c2.example.org" in (m["source"],
                                                                      m["destination"])], plan
    assert "c2.example.org" not in plan["power_off"] and "c2.example.org" not in \
        plan["left_on"], plan
    kept = ("not emptied, as it stays on anyway (N+1, the last of a zone, no BMC or the power "
            "cool-down): c2.example.org")
    assert kept in plan["notes"], plan
    assert "not emptied, as it stays on anyway" in without_c2("plan", "show", plan["id"]).out
    applied = without_c2("apply", plan["id"], "--yes")
    assert applied.code == 0, applied.out + applied.err
    assert nova.where()["b0"] == "c2"
    assert nova.power()["c2.example.org"] == "on"
    assert (nova.services()["c2"].status, nova.services()["c2"].state) == ("enabled", "up")
    assert not [r for r in rows_of(story, plan["id"]) if r[0] in ("disable", "power_off")
                and r[1] in ("c2", "c2.example.org")]
