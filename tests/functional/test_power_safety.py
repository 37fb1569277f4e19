"""Issue 23, the power half: no path powers off a host that holds work, on the fake cloud.

Each test replays one way the review broke the cloud (the issue's points 1, 2, 3, 4 and 10)
and ends by asserting the invariants: 0 hosts powered off holding a server, an unfinished
migration or Placement usage; 0 destructive calls without the current lease generation;
0 instances lost.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.leases import LeaseHeldError, acquire, acquire_or_raise, make_holder
from tests.functional.lease_actor import wait_for_renewal
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator
from tests.functional.test_apply_cli import fast as fast  # the fixture
from tests.functional.test_executor import Bed, fake_bed
from tests.functional.test_executor import bed as bed  # the fixture
from tests.functional.test_power_recheck import build_during_grace
from tests.functional.waits import PATIENCE_S, stop_process, wait_for_row

#: The journal actions that precede a call changing the cloud.
DESTRUCTIVE = {"migrate", "disable", "enable", "power_on", "power_off", "force_down",
               "unfence", "abort", "force_complete"}


def assert_guarded(engine: object) -> None:
    """0 destructive calls without a lease generation: every destructive row names the
    holder and generation it was written under, and no generation was written by two
    holders."""
    rows = [e for e in journal.entries(engine) if e.action in DESTRUCTIVE
            and e.state != journal.SKIPPED]
    assert rows
    assert all(e.lease_holder and e.lease_generation for e in rows), \
        [(e.action, e.target, e.lease_holder, e.lease_generation) for e in rows]
    owners: dict[int, set[str]] = {}
    for e in rows:
        owners.setdefault(e.lease_generation, set()).add(e.lease_holder)
    assert all(len(h) == 1 for h in owners.values()), owners


def assert_no_work_on_a_powered_off_host(state: dict) -> None:
    """From the fake cloud's own state: no host that is off holds a server, an unfinished
    migration (as source or destination) or Placement usage."""
    for name, host in state["hosts"].items():
        if host["power"] == "off":
            assert not [s for s, v in state["servers"].items() if v["host"] == name], name
            assert not [m for m in state["migrations"]
                        if m["status"] not in ("completed", "error", "cancelled", "failed")
                        and name in (m["source"], m["dest"])], name
            assert not any(host["used"]), (name, host["used"])


# -- point 4: lease holders ----------------------------------------------------------------


def test_a_holder_named_like_a_dead_local_process_keeps_its_lease(bed: Bed) -> None:  # noqa: F811
    """Point 4: an executor in another PID namespace with this host's name (containers on
    the host network) looked dead, and a second executor took its lease: both ran. Holders
    are now judged only by the lease's expiry on the database's clock."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    other = f"{socket.gethostname()}:{dead}:0badc0de"
    plan = bed.plan()
    executor = bed.executor()
    name = f"executor:{executor.cloud}"
    assert acquire(bed.engine, name, other, 60) is not None
    with pytest.raises(LeaseHeldError, match="0badc0de"):
        acquire_or_raise(bed.engine, name, make_holder(), 60, "an executor")
    with pytest.raises(LeaseHeldError, match="0badc0de"):
        executor.run(plan)
    assert all(bed.cloud.power(h.name) == "on" for h in bed.cloud.cluster().hosts)


def test_holders_are_random_tokens() -> None:
    ours = make_holder()
    assert ours != make_holder()
    assert socket.gethostname() not in ours and str(os.getpid()) not in ours


# -- point 1: 'hosts power off --force' keeps its lease for the whole shutdown ---------------


#: The short executor lease: far shorter than a graceful shutdown held by the tests, long
#: enough that its renewals (every third of it) keep it on a loaded machine.
SHORT_TTL_S = 5.0


def lease_scenario() -> dict:
    """c1 holds two servers, c2 one, c3 none; each shutdown takes 8 s (or as long as a test
    holds it with a bmc_shutdown_held fault)."""
    hosts = [{"name": f"c{n}", "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
              "bmc": {"driver": "redfish"}} for n in (1, 2, 3)]
    instances = [{"name": f"vm-{k}", "host": "c1" if k < 2 else "c2", "vcpus": 2,
                  "memory_mb": 1024, "disk_gb": 20} for k in range(3)]
    return {"hosts": hosts, "instances": instances,
            "settings": {"service_up_delay_s": 0.2, "bmc_graceful_delay_s": 8.0}}


def short_lease_operator(served: object, tmp_path: Path) -> Operator:
    """An operator whose executor lease is shorter than a graceful shutdown."""
    config = tmp_path / "consolidator.conf"
    config.write_text(f"[executor]\npoll_interval = 0.05\npower_timeout = {PATIENCE_S:g}\n"
                      f"lease_ttl = {SHORT_TTL_S:g}\n[planner]\nn_plus_one = false\n")
    op = Operator(served=served, db_url=f"sqlite:///{tmp_path / 'c.db'}", config=config)
    assert op("db", "upgrade").code == 0
    return op


@pytest.fixture
def short_lease(tmp_path: Path) -> Iterator[Operator]:
    with served_cloud(lease_scenario(), tmp_path) as served:
        yield short_lease_operator(served, tmp_path)


@contextmanager
def running(op: Operator, *args: str) -> Iterator[subprocess.Popen]:
    """A consolidator command running in the background, killed if the block fails."""
    proc = op.popen(*args)
    try:
        yield proc
    finally:
        stop_process(proc)


def test_hosts_power_off_keeps_the_lease_through_a_long_graceful_shutdown(
        short_lease: Operator) -> None:
    """Point 1: the guard of 'hosts power off --force' was thrown away; nothing renewed the
    lease (TTL shorter than the graceful wait), so a rollback took it and moved instances
    onto the host being shut down. The lease is now held, and renewed, until it is off. The
    shutdown is held (a fault) until the lease has outlived its first expiry and the
    intruder has been refused."""
    op = short_lease
    engine = make_engine(op.db_url)
    op.served.add_fault({"type": "bmc_shutdown_held", "host": "c3"})
    with running(op, "hosts", "power", "off", "c3", "--force", "--yes") as proc:
        wait_for_row(engine, "power_off", "c3")
        wait_for_renewal(engine, "executor:fake", SHORT_TTL_S)
        assert acquire(engine, "executor:fake", "an-intruder", 60) is None
        intruder = op("hosts", "power", "on", "c3")
        assert intruder.code == 1 and "already running" in intruder.err, intruder.err
        op.served.clear_faults()
        out, err = proc.communicate(timeout=PATIENCE_S)
    assert proc.returncode == 0, out + err
    state = op.served.state()
    assert state["hosts"]["c3"]["power"] == "off"
    assert_no_work_on_a_powered_off_host(state)
    assert len(state["servers"]) == 3
    assert_guarded(engine)


# -- point 2: the re-check after a graceful shutdown, and 'hosts power on' ----------------


def test_work_landing_while_a_graceful_shutdown_completes_is_rescued(tmp_path: Path) -> None:
    """Point 2: the re-check ran only before a forced power-off; a graceful shutdown that
    completed took a server down with its host, and the apply said "succeeded". Now the host
    is re-checked once off: powered on again at once, enabled, and the run fails."""
    from consolidator.store.plans import load_plan

    with fake_bed(tmp_path, bmc_graceful_delay_s=0.5) as bed:
        engine, cloud = bed.engine, bed.cloud
        plan = bed.plan()
        landing = build_during_grace(bed, "c5", "vm-1-0", hold_shutdown=True)
        outcome = bed.executor(bmc={"grace": PATIENCE_S}).run(plan)   # never forced
        landing.join(timeout=PATIENCE_S)
        assert "c5" not in outcome.powered_off
        assert "work landed on it during its shutdown" in outcome.left_on["c5"]
        assert "powered on again and enabled" in outcome.left_on["c5"]
        assert cloud.power("c5") == "on"
        vm = next(i.id for i in cloud.cluster().instances if i.name == "vm-1-0")
        assert cloud.server_host(vm) == "c5"
        service = next(s for s in cloud.connect().compute.services() if s.host == "c5")
        assert service.status == "enabled" and not service.is_forced_down
        rows = [(e.action, e.state) for e in journal.entries(engine, plan_id=plan.id)
                if e.target == "c5"]
        assert rows[-3:] == [("power_off", journal.SUCCEEDED),
                             ("power_on", journal.SUCCEEDED), ("enable", journal.SUCCEEDED)]
        assert load_plan(engine, plan.id).status == "failed"
        bed.assert_safe()
        assert_no_work_on_a_powered_off_host(cloud.state.summary())
        assert_guarded(engine)


def test_hosts_power_on_is_refused_while_an_apply_shuts_a_host_down(
        short_lease: Operator) -> None:
    """Point 2: 'hosts power on' took no lease and wrote no journal row: during an apply's
    graceful shutdown of c2 it re-enabled c2, and a live migration landed there. It now
    needs the executor lease, which the apply holds (c2's shutdown is held by a fault until
    the command has been refused)."""
    op = short_lease
    assert op("snapshot").code == 0
    plan = op.plan()
    assert plan["power_off"] == ["c2", "c3"] or sorted(plan["power_off"]) == ["c2", "c3"]
    engine = make_engine(op.db_url)
    op.served.add_fault({"type": "bmc_shutdown_held", "host": "c2"})
    with running(op, "apply", plan["id"]) as proc:
        wait_for_row(engine, "power_off", "c2")
        refused = op("hosts", "power", "on", "c2")
        assert refused.code == 1 and "already running" in refused.err, refused.err
        op.served.clear_faults()
        out, err = proc.communicate(timeout=PATIENCE_S)
    assert proc.returncode == 0, out + err
    state = op.served.state()
    assert state["hosts"]["c2"]["power"] == "off" and state["hosts"]["c2"]["status"] == \
        "disabled"
    assert_no_work_on_a_powered_off_host(state)
    assert len(state["servers"]) == 3
    back = op("hosts", "power", "on", "c2")
    assert back.code == 0, back.err
    state = op.served.state()["hosts"]["c2"]
    assert (state["power"], state["status"], state["state"]) == ("on", "enabled", "up")
    rows = [(e.action, e.state) for e in journal.entries(engine)
            if e.target == "c2" and e.plan_id is None]
    assert rows == [("power_on", journal.SUCCEEDED), ("unfence", journal.SUCCEEDED),
                    ("enable", journal.SUCCEEDED)]
    assert_guarded(engine)


# -- point 3: a BMC entry that reaches another host's system --------------------------------


def miswire(bed: Bed, host: str, onto: str, *, identity: bool, drop: tuple[str, ...] = ()
            ) -> None:
    """Point the bmc.yaml entry of `host` at the Redfish system of `onto` (keeping or
    dropping the identity keys), and drop the entries named in `drop`."""
    path = bed.cloud.write_bmc_yaml(bed.tmp / "bmc.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["hosts"][host]["system_id"] = f"/redfish/v1/Systems/{onto}"
    for entry in doc["hosts"].values():
        if not identity:
            entry.pop("system_uuid", None)
    for name in drop:
        del doc["hosts"][name]
    bed.cloud.write_bmc_yaml = lambda p: (Path(p).write_text(yaml.safe_dump(doc)), Path(p))[1]


@pytest.mark.parametrize("identity", [True, False], ids=["identity-given", "no-identity"])
def test_a_miswired_bmc_entry_is_caught_before_anything_moves(bed: Bed,  # noqa: F811
                                                              identity: bool) -> None:
    """Point 3: with c3's system_id pointing at c1's system, the apply powered off c1 (8
    servers) and reported success. The pre-flight now reads the system each entry reaches:
    by the identity bmc.yaml gives, or, without one, because c1's own entry reaches it too."""
    plan = bed.plan()
    miswire(bed, "c3", "c1", identity=identity)
    outcome = bed.run(plan)
    assert "its BMC failed the pre-flight" in outcome.left_on["c3"]
    expected = "expects its system uuid" if identity else "the same system as c1's"
    assert expected in outcome.left_on["c3"], outcome.left_on["c3"]
    assert bed.cloud.power("c1") == "on" and bed.cloud.power("c3") == "on"
    assert len(bed.cloud.cluster().instances_on("c3")) == 2
    assert sorted(outcome.powered_off) == ["c4", "c5"]
    bed.assert_safe()
    assert_no_work_on_a_powered_off_host(bed.cloud.state.summary())


def test_a_power_off_that_silences_another_compute_is_undone(tmp_path: Path) -> None:
    """Point 3, the post-condition: c3's entry reaches c1's system, and nothing says so
    beforehand (no identity in bmc.yaml, no entry for c1, and 'hosts power off' has no
    pre-flight).
    Once its BMC reads off, c3's nova-compute still reports and c1's does not: c1's system
    is powered on again, c3 is enabled again, and every further power action is refused."""
    from consolidator.app import power
    from consolidator.app.context import AppContext
    from consolidator.core.errors import ConsolidatorError
    from consolidator.power.bmc_file import load_bmc_file
    from consolidator.power.catalog import driver_for
    from tests.functional.test_executor import PACKED

    doc = lease_scenario()
    doc["settings"] = {}
    with fake_bed(tmp_path, doc) as bed:
        engine, cloud = bed.engine, bed.cloud
        miswire(bed, "c3", "c1", identity=False, drop=("c1",))
        path = cloud.write_bmc_yaml(tmp_path / "bmc.yaml")
        path.chmod(0o600)
        configs = load_bmc_file(path)
        ctx = AppContext.of(config=PACKED, engine=engine, connect=cloud.connect,
                            power=lambda h: driver_for(configs[h]) if h in configs else None)
        with pytest.raises(ConsolidatorError, match="reaches another") as refused:
            power.power_off(ctx, "c3", force=True, confirm=lambda _q: True)
        assert "every further power action is stopped" in str(refused.value)
        assert "c1 stopped reporting" in str(refused.value) or \
            "still reports" in str(refused.value)
        assert cloud.power("c1") == "on" and cloud.power("c3") == "on"
        services = {s.host: s for s in cloud.connect().compute.services()}
        assert services["c3"].status == "enabled"
        assert [(e.action, e.state) for e in journal.entries(engine) if e.target == "c3"] == [
            ("disable", journal.SUCCEEDED), ("power_off", journal.SUCCEEDED),
            ("bmc_miswired", journal.FAILED), ("power_on", journal.SUCCEEDED),
            ("enable", journal.SUCCEEDED)]
        # The same entry is not trusted again until it names its system, whatever clouds.yaml
        # name the cloud is reached by (issue 45: the row is kept under its identity).
        for name in (None, "another-name-for-it"):
            again = AppContext.of(config=PACKED, engine=engine, connect=cloud.connect,
                                  power=ctx.power, cloud=name)
            with pytest.raises(ConsolidatorError, match="powered off another system"):
                power.power_off(again, "c3", force=True, confirm=lambda _q: True)
        assert cloud.power("c1") == "on" and cloud.power("c3") == "on"
        assert len(cloud.cluster().instances) == 3
        assert_no_work_on_a_powered_off_host(cloud.state.summary())
        assert_guarded(engine)


def test_a_driver_refuses_to_power_a_system_bmc_yaml_does_not_name(bed: Bed) -> None:  # noqa: F811
    """Every power action checks the identity first: nothing is sent to the wrong system."""
    from consolidator.core.errors import ConsolidatorError
    from consolidator.power.bmc_file import load_bmc_file
    from consolidator.power.catalog import driver_for

    miswire(bed, "c3", "c1", identity=True)
    path = bed.cloud.write_bmc_yaml(bed.tmp / "bmc.yaml")
    path.chmod(0o600)
    driver = driver_for(load_bmc_file(path)["c3"])
    for act in (lambda: driver.power_off(timeout=5), lambda: driver.power_on(timeout=5)):
        with pytest.raises(ConsolidatorError, match="expects its system uuid"):
            act()
    assert not bed.cloud.requests("/redfish/v1/Systems/*/Actions/ComputerSystem.Reset",
                                  "POST")
    assert bed.cloud.power("c1") == "on"


# -- the BMC check: identity and power against Nova -----------------------------------------


def test_bmc_check_reports_each_systems_identity_and_a_miswired_entry(fast: Operator
                                                                     ) -> None:
    """'consolidator bmc-check' reads every BMC (IPMI and Redfish, served in another
    process): each reports a distinct system identity, and agrees with Nova; an entry
    pointed at another host's BMC is named, by its identity or, without one, because it
    reaches the same system as that host's own entry."""
    import json

    ok = fast("bmc-check", "--format", "json")
    assert ok.code == 0, ok.out + ok.err
    rows = {r["host"]: r for r in json.loads(ok.out)}
    assert set(rows) == {"c1", "c2", "c3", "c4"}
    assert all(r["agrees"] and r["power"] == "on" and r["nova"] == "up" for r in rows.values())
    assert set(rows["c1"]["identity"]) == {"guid"} and "uuid" in rows["c2"]["identity"]
    ids = [next(iter(sorted(r["identity"].values()))) for r in rows.values()]
    assert len(set(ids)) == 4
    assert rows["c1"]["expected_identity"] == rows["c1"]["identity"]
    shown = fast("bmc-check")
    assert shown.code == 0 and "guid=" in shown.out and "yes" in shown.out, shown.err
    path = fast.served.bmc_yaml
    doc = yaml.safe_load(path.read_text())
    doc["hosts"]["c3"]["port"] = doc["hosts"]["c1"]["port"]
    path.write_text(yaml.safe_dump(doc))
    wrong = fast("bmc-check", "--format", "json")
    assert wrong.code == 1 and "1 host does not agree: c3" in wrong.err, wrong.err
    assert "expects its system guid" in {r["host"]: r for r in json.loads(wrong.out)}["c3"][
        "problem"]
    for entry in doc["hosts"].values():
        entry.pop("system_guid", None)
        entry.pop("system_uuid", None)
    path.write_text(yaml.safe_dump(doc))
    unnamed = fast("bmc-check", "--format", "json")
    assert unnamed.code == 1, unnamed.err
    problems = {r["host"]: r["problem"] for r in json.loads(unnamed.out)}
    assert "the same system as c1's" in problems["c3"]
    assert "the same system as c3's" in problems["c1"]
    assert problems["c2"] is None and problems["c4"] is None
    # An entry under a name no compute host has (a typo) powers nothing: named, and exit 1.
    doc["hosts"]["c-4"] = doc["hosts"].pop("c4")
    path.write_text(yaml.safe_dump(doc))
    stray = fast("bmc-check", "--format", "json")
    assert stray.code == 1 and "c-4" in stray.err, stray.err
    rows = {r["host"]: r for r in json.loads(stray.out)}
    assert rows["c4"]["driver"] == "-" and rows["c4"]["agrees"] is None
    assert "matches no compute host" in rows["c-4"]["problem"]
    assert rows["c-4"]["agrees"] is False
