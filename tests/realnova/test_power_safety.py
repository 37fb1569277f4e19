"""Issue 23, the power half, on the real Nova and Placement: the faults that exist there.

Each test serves a cloud of its own, so that pytest-xdist may run them in any order, on any
worker: c1 holds a0-a2, c2 holds b0, c3 is empty; every BMC's graceful shutdown takes 8 s,
longer than the 5 s executor lease one test uses (that test holds the shutdown until it has
seen what it needs). Nova's computes report every 2 s and are reported down 10 s after they
stop.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.leases import acquire
from tests.functional.lease_actor import wait_for_renewal
from tests.functional.test_power_safety import assert_guarded
from tests.functional.waits import PATIENCE_S, stop_process, wait_for_row
from tests.realnova.operator import CONFIG, Operator, operator_for
from tests.realnova.served import NovaView, served_nova

GRACEFUL_S = 8.0
#: The short executor lease: shorter than a graceful shutdown, long enough that its renewals
#: (every third of it) keep it on a loaded machine.
SHORT_TTL_S = 5.0


def scenario() -> dict[str, Any]:
    """c1 (a0-a2) and c3 (empty) on Redfish BMCs, c2 (b0) on IPMI."""
    drivers = {"c1": "redfish", "c2": "ipmi", "c3": "redfish"}
    hosts = [{"name": name, "vcpus": 8, "memory_mb": 16384, "disk_gb": 200,
              "cpu_allocation_ratio": 2.0, "bmc": {"driver": driver}}
             for name, driver in drivers.items()]
    where = {"a0": "c1", "a1": "c1", "a2": "c1", "b0": "c2"}
    instances = [{"name": name, "host": host, "vcpus": 1, "memory_mb": 1024, "disk_gb": 10}
                 for name, host in where.items()]
    return {"hosts": hosts, "instances": instances,
            "settings": {"bmc_graceful_delay_s": GRACEFUL_S}}


@dataclass
class Cloud:
    """The served cloud, an operator with the usual lease, and one with a short lease."""

    op: Operator
    short: Operator
    nova: NovaView
    bmc_yaml: str

    def assert_safe(self) -> None:
        """0 instances lost (all ACTIVE), 0 hosts off with a server."""
        assert self.nova.statuses() == {n: "ACTIVE" for n in ("a0", "a1", "a2", "b0")}
        power, where = self.nova.power(), self.nova.where()
        for host, state in power.items():
            if state == "off":
                assert host not in where.values(), host


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[Cloud]:
    """A cloud of its own for each test."""
    tmp = tmp_path
    with served_nova(scenario(), tmp, service_down_time=10) as served:
        op = operator_for(served, tmp)
        short_config = tmp / "short.conf"
        short_config.write_text(CONFIG.format(auto_apply="false").replace(
            "lease_ttl = 30", f"lease_ttl = {SHORT_TTL_S:g}"))
        short = Operator(served=served, db_url=op.db_url, config=short_config)
        yield Cloud(op=op, short=short, nova=NovaView(served),
                    bmc_yaml=Path(served.bmc_yaml).read_text())


def test_a_power_off_that_silences_another_compute_is_undone(cloud: Cloud) -> None:
    """Point 3: c3's entry reaches c1's Redfish system (no identity, no entry for c1). Real
    Nova's heartbeats show it once the BMC reads off: c3's compute still reports, c1's does
    not. c1 is powered on again with its three servers, c3 enabled again, exit 1."""
    path = Path(cloud.op.served.bmc_yaml)
    doc = yaml.safe_load(cloud.bmc_yaml)
    doc["hosts"]["c3"]["system_id"] = "/redfish/v1/Systems/c1"
    doc["hosts"]["c3"].pop("system_uuid", None)
    del doc["hosts"]["c1"]
    path.write_text(yaml.safe_dump(doc))
    try:
        refused = cloud.op("hosts", "power", "off", "c3", "--force", "--yes")
        cloud.nova.wait(lambda: cloud.nova.services()["c1"].state == "up",
                        "c1's compute back up")
        again = cloud.op("hosts", "power", "off", "c3", "--force", "--yes")
    finally:
        path.write_text(cloud.bmc_yaml)
    assert again.code == 1 and "powered off another system" in again.err, again.err
    assert refused.code == 1, refused.out + refused.err
    assert "reaches another" in refused.err and "every further power action is stopped" in \
        refused.err, refused.err
    assert cloud.nova.power() == {"c1": "on", "c2": "on", "c3": "on"}
    cloud.nova.wait(lambda: cloud.nova.services()["c1"].state == "up", "c1's compute back up")
    assert cloud.nova.services()["c3"].status == "enabled"
    assert cloud.nova.where() == {"a0": "c1", "a1": "c1", "a2": "c1", "b0": "c2"}
    cloud.assert_safe()


def test_a_miswired_entry_with_its_identity_powers_nothing(cloud: Cloud) -> None:
    """Point 3, with the identity bmc.yaml carries: the driver reads the system first and
    sends nothing to c1's."""
    path = Path(cloud.op.served.bmc_yaml)
    doc = yaml.safe_load(cloud.bmc_yaml)
    doc["hosts"]["c3"]["system_id"] = "/redfish/v1/Systems/c1"
    path.write_text(yaml.safe_dump(doc))
    try:
        refused = cloud.op("hosts", "power", "off", "c3", "--force", "--yes")
        check = cloud.op("bmc-check")
    finally:
        path.write_text(cloud.bmc_yaml)
    assert refused.code == 1 and "expects its system uuid" in refused.err, refused.err
    assert check.code == 1 and "c3" in check.err, check.out + check.err
    assert cloud.nova.power() == {"c1": "on", "c2": "on", "c3": "on"}
    assert cloud.op("bmc-check").code == 0
    cloud.assert_safe()


def test_hosts_power_off_keeps_its_lease_through_a_long_graceful_shutdown(cloud: Cloud
                                                                         ) -> None:
    """Point 1: with a lease shorter than the graceful shutdown, the lease of 'hosts power
    off --force' lapsed and a rollback moved servers onto c3 while it shut down. It is
    renewed now: nothing else takes it until c3 is off. c3's shutdown is held (a fault) until
    the lease has outlived its first expiry and the intruder has been refused."""
    engine = make_engine(cloud.op.db_url)
    cloud.nova.served.add_fault({"type": "bmc_shutdown_held", "host": "c3"})
    proc = cloud.short.popen("hosts", "power", "off", "c3", "--force", "--yes")
    try:
        wait_for_row(engine, "power_off", "c3")
        wait_for_renewal(engine, "executor:realnova", SHORT_TTL_S)
        assert acquire(engine, "executor:realnova", "an-intruder", 60) is None
        intruder = cloud.op("hosts", "power", "on", "c3")
        assert intruder.code == 1 and "already running" in intruder.err, intruder.err
        cloud.nova.served.clear_faults()
        out, err = proc.communicate(timeout=PATIENCE_S)
    finally:
        stop_process(proc)
    assert proc.returncode == 0, out + err
    assert cloud.nova.power()["c3"] == "off"
    assert "c3" not in cloud.nova.where().values()
    back = cloud.op("hosts", "power", "on", "c3")
    assert back.code == 0, back.out + back.err
    assert cloud.nova.services()["c3"].status == "enabled"
    rows = [(e.action, e.state) for e in journal.entries(engine)
            if e.target == "c3" and e.plan_id is None][-3:]
    assert rows == [("power_on", journal.SUCCEEDED), ("unfence", journal.SUCCEEDED),
                    ("enable", journal.SUCCEEDED)]
    cloud.assert_safe()
    assert_guarded(engine)


def test_a_forced_live_migration_during_the_graceful_shutdown_is_rescued(cloud: Cloud
                                                                         ) -> None:
    """Point 2: an admin's forced live migration (2.30 force) onto c2 while the apply shut
    it down gracefully landed, the shutdown completed, and the apply said "succeeded" with
    c2 off holding a server. Now c2 is re-checked once off: powered on again, enabled, and
    the apply fails loudly. c2's shutdown is held (a fault) until a0 has landed."""
    op, nova = cloud.op, cloud.nova
    plan = op.plan()
    assert "c2" in plan["power_off"], plan
    engine = make_engine(cloud.op.db_url)
    nova.served.add_fault({"type": "bmc_shutdown_held", "host": "c2"})
    proc = op.popen("apply", plan["id"])
    try:
        wait_for_row(engine, "power_off", "c2")
        a0 = nova.servers()["a0"]
        nova.conn.compute.live_migrate_server(a0, host="c2", force=True,
                                              block_migration="auto")
        nova.wait(lambda: nova.where()["a0"] == "c2" and
                  nova.statuses()["a0"] == "ACTIVE", "a0 to land on c2")
        nova.served.clear_faults()
        out, err = proc.communicate(timeout=PATIENCE_S)
    finally:
        stop_process(proc)
    assert proc.returncode == 1, out + err
    assert "work landed on it during its shutdown" in out + err
    assert nova.power()["c2"] == "on"
    nova.wait(lambda: nova.services()["c2"].state == "up", "c2's compute back up")
    assert nova.services()["c2"].status == "enabled"
    assert nova.where()["a0"] == "c2"
    cloud.assert_safe()
    assert_guarded(engine)


def test_a_bmc_refusing_its_login_keeps_its_host_from_being_emptied(cloud: Cloud) -> None:
    """Point 10: c2 was emptied, then its BMC refused the login and it stayed disabled and
    on. The pre-flight now logs in before the first migration: c2 is not emptied."""
    op, nova = cloud.op, cloud.nova
    nova.served.add_fault({"type": "bmc_auth_fails", "host": "c2"})
    try:
        before = nova.where()
        plan = op.plan()
        assert "c2" in plan["power_off"], plan
        applied = op("apply", plan["id"])
    finally:
        nova.served.clear_faults()
    assert applied.code == 1, applied.out + applied.err
    assert "c2: not emptied: its BMC failed the pre-flight" in applied.out + applied.err
    assert [n for n, h in nova.where().items() if h == "c2"] == \
        [n for n, h in before.items() if h == "c2"]
    assert nova.power()["c2"] == "on" and nova.services()["c2"].status == "enabled"
    cloud.assert_safe()


def test_a_power_off_its_bmc_refuses_leaves_the_host_on_and_enabled(cloud: Cloud) -> None:
    """Point 10, the power-off that fails anyway: the BMC refuses the login at the power-off
    itself (no pre-flight outside a plan). Real Nova's next heartbeat shows the host still
    on, so it is enabled again, journaled, and the error says how to recover."""
    op, nova = cloud.op, cloud.nova
    if nova.power()["c3"] == "off":
        op.ok("hosts", "power", "on", "c3")
    assert "c3" not in nova.where().values()
    nova.served.add_fault({"type": "bmc_auth_fails", "host": "c3"})
    try:
        refused = op("hosts", "power", "off", "c3", "--force", "--yes")
    finally:
        nova.served.clear_faults()
    assert refused.code == 1, refused.out + refused.err
    assert "authentication refused" in refused.err
    assert "left on and enabled again" in refused.err and "bmc-check" in refused.err
    assert nova.power()["c3"] == "on" and nova.services()["c3"].status == "enabled"
    rows = [(e.action, e.state) for e in journal.entries(make_engine(op.db_url))
            if e.target == "c3"][-3:]
    assert rows == [("disable", journal.SUCCEEDED), ("power_off", journal.FAILED),
                    ("enable", journal.SUCCEEDED)]
    cloud.assert_safe()
