"""The one guarded power-off path: 'hosts power off' and the executor, on the fake cloud.

Each test reproduces a way the review of issue 14 hurt a cloud: a host named differently in
Nova's hypervisor list and its services, a live migration still running into a host being
powered off, and Placement still holding resources on an 'empty' host."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidator.app.power import OPERATOR_REASON
from consolidator.execution.host_power import GuardedPower
from consolidator.openstack.nova import Nova
from consolidator.store import journal
from consolidator.store.db import make_engine
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for
from tests.functional.test_executor import Bed, bed  # noqa: F401 - the fixture


def fqdn_scenario() -> dict:
    """Hypervisors named c1.example.org and c2.example.org, their services c1 and c2."""
    hosts = [{"name": f"c{n}.example.org", "compute_host": f"c{n}", "vcpus": 16,
              "memory_mb": 65536, "disk_gb": 1000, "bmc": {"driver": "redfish"}}
             for n in (1, 2)]
    instances = [{"name": "busy", "host": "c1.example.org", "vcpus": 2, "memory_mb": 1024,
                  "disk_gb": 20}]
    return {"hosts": hosts, "instances": instances,
            "settings": {"service_up_delay_s": 0.2, "bmc_graceful_delay_s": 0.1}}


@pytest.fixture
def fqdn(tmp_path: Path) -> Iterator[Operator]:
    with served_cloud(fqdn_scenario(), tmp_path) as served:
        yield operator_for(served, tmp_path)


def test_hosts_power_off_refuses_a_host_with_an_active_instance(fqdn: Operator) -> None:
    """Defect 1: the BMC file's (hypervisor) name went into Nova's host filter, which takes
    the service host, found no server, and cut the power. Both names now mean the host."""
    for name in ("c1.example.org", "c1"):
        refused = fqdn("hosts", "power", "off", name, "--yes", "--force")
        assert refused.code == 1, refused.out + refused.err
        assert "refusing to power off c1.example.org: 1 server is still on it" in refused.err
    assert fqdn.where()["power:c1.example.org"] == "on"
    unknown = fqdn("hosts", "power", "off", "c9", "--yes", "--force")
    assert unknown.code == 2 and "no compute host is named 'c9'" in unknown.err


def test_hosts_power_off_takes_the_guarded_path_and_power_on_undoes_it(fqdn: Operator
                                                                       ) -> None:
    done = fqdn("hosts", "power", "off", "c2", "--yes", "--force")
    assert done.code == 0, done.err
    assert fqdn.where()["power:c2.example.org"] == "off"
    state = fqdn.served.state()["hosts"]["c2.example.org"]
    assert state["status"] == "disabled" and state["disabled_reason"] == OPERATOR_REASON
    rows = journal.entries(make_engine(fqdn.db_url))
    assert [(e.action, e.target, e.state) for e in rows] == [
        ("disable", "c2.example.org", journal.SUCCEEDED),
        ("power_off", "c2.example.org", journal.SUCCEEDED),
        ("force_down", "c2.example.org", journal.SUCCEEDED)]
    back = fqdn("hosts", "power", "on", "c2.example.org")
    assert back.code == 0, back.err
    state = fqdn.served.state()["hosts"]["c2.example.org"]
    assert (state["power"], state["status"], state["state"]) == ("on", "enabled", "up")


def test_no_power_off_while_a_live_migration_runs_into_the_host(bed: Bed) -> None:  # noqa: F811
    """Defect 2: during a live migration Nova keeps the instance on its source, so 'no
    server on the host' held for a host a migration was still filling."""
    plan = bed.plan()
    assert "c5" in plan.draft.power_off
    bed.cloud.add_fault({"type": "migration_hangs", "instance": "vm-1-0"})
    conn = bed.cloud.connect()
    arriving = next(s for s in conn.compute.servers(all_projects=True) if s.name == "vm-1-0")
    Nova(conn).live_migrate(arriving.id, "c5")
    outcome = bed.run(plan)
    assert "c5" not in outcome.powered_off
    assert "unfinished migrations" in outcome.left_on["c5"] and "into it" in \
        outcome.left_on["c5"]
    assert bed.cloud.power("c5") == "on"
    service = next(s for s in conn.compute.services() if s.host == "c5")
    assert service.status == "enabled"
    assert sorted(outcome.powered_off) == ["c3", "c4"]


def test_placement_usage_keeps_an_empty_host_on(bed: Bed) -> None:  # noqa: F811
    """An allocation left in Placement (an orphan, a claim of a build the compute has not
    picked up) means the host is not empty."""
    bed.plan()
    host = next(h for h in bed.cloud.cluster().hosts if h.name == "c5")
    guarded = GuardedPower(bed.engine, Nova(bed.cloud.connect()), "fake", lambda _: None,
                              timeout=10)
    for server in list(bed.cloud.state.hosts["c5"].servers):
        bed.cloud.state.hosts["c5"].servers.pop(server)
        bed.cloud.state.servers[server].host = "c1"
    assert guarded.not_empty(host) is not None
    assert "Placement still holds" in guarded.not_empty(host)


def test_rollback_leaves_a_host_an_operator_disabled_alone(bed: Bed) -> None:  # noqa: F811
    """Defect 4: a host consolidator powered off, then disabled by an operator for 'DIMM
    errors', was powered on, enabled and given instances back by rollback."""
    from consolidator.app.config import Config
    from consolidator.app.context import AppContext
    from consolidator.app.rollback import prepare_rollback
    from consolidator.store.plans import set_status
    from consolidator.store.snapshots import load_snapshot

    plan = bed.plan()
    before = load_snapshot(bed.engine, bed.snapshot_id)
    assert bed.run(plan).ok
    conn = bed.cloud.connect()
    Nova(conn).set_service("c4", enabled=False, reason="DIMM errors")
    ctx = AppContext.of(config=Config(), engine=bed.engine, connect=bed.cloud.connect)
    prepared = prepare_rollback(ctx, before.info.id)
    assert prepared.plan is not None
    assert set(prepared.plan.draft.power_on) == {"c3", "c5"}
    assert any("c4" in n and "DIMM errors" in n for n in prepared.notes)
    set_status(bed.engine, prepared.plan.id, "approved")
    outcome = bed.executor().run(prepared.plan)
    assert outcome.ok, outcome
    assert bed.cloud.power("c4") == "off"
    service = next(s for s in conn.compute.services() if s.host == "c4")
    assert service.status == "disabled" and service.disabled_reason == "DIMM errors"
    assert not bed.cloud.cluster().instances_on("c4")
    for inst in before.cluster.instances:
        if inst.host != "c4":
            assert bed.cloud.server_host(inst.id) == inst.host, inst.name


def test_rollback_resume_finds_the_interrupted_rollback(bed: Bed) -> None:  # noqa: F811
    from consolidator.app.config import Config
    from consolidator.app.context import AppContext
    from consolidator.app.rollback import interrupted_rollback, prepare_rollback
    from consolidator.core.errors import UsageError
    from consolidator.store.plans import set_status
    from consolidator.store.snapshots import load_snapshot

    plan = bed.plan()
    before = load_snapshot(bed.engine, bed.snapshot_id)
    assert bed.run(plan).ok
    ctx = AppContext.of(config=Config(), engine=bed.engine, connect=bed.cloud.connect)
    with pytest.raises(UsageError, match="no interrupted rollback"):
        interrupted_rollback(ctx, before.info.id)
    prepared = prepare_rollback(ctx, before.info.id)
    assert prepared.plan is not None
    set_status(bed.engine, prepared.plan.id, "approved")
    set_status(bed.engine, prepared.plan.id, "running")   # as a killed rollback leaves it
    assert interrupted_rollback(ctx, before.info.id).id == prepared.plan.id
    outcome = bed.executor().run(interrupted_rollback(ctx, before.info.id), resume=True)
    assert outcome.ok, outcome
    for inst in before.cluster.instances:
        assert bed.cloud.server_host(inst.id) == inst.host


def test_rollback_resume_refuses_a_rollback_a_newer_plan_overtook(bed: Bed) -> None:  # noqa: F811
    """Issue 33 case 7, its rollback twin: 'rollback --resume' re-ran an interrupted rollback
    that a newer plan had overtaken, though 'apply --resume' and the daemon refuse that."""
    from consolidator.app.config import Config
    from consolidator.app.context import AppContext
    from consolidator.app.rollback import prepare_rollback, roll_back
    from consolidator.core.errors import UsageError
    from consolidator.store.plans import load_plan, set_status
    from consolidator.store.snapshots import load_snapshot

    assert bed.run(bed.plan()).ok
    before = load_snapshot(bed.engine, bed.snapshot_id)
    ctx = AppContext.of(config=Config(), engine=bed.engine, connect=bed.cloud.connect)
    prepared = prepare_rollback(ctx, before.info.id)
    assert prepared.plan is not None
    set_status(bed.engine, prepared.plan.id, "approved")
    set_status(bed.engine, prepared.plan.id, "running")   # as a killed rollback leaves it
    newer = bed.plan()                                    # the operator moved on since
    ran: list[str] = []
    with pytest.raises(UsageError, match=f"overtaken by a newer plan \\(plan {newer.id}"):
        roll_back(ctx, before.info.id, partial=False, resume=True, dry_run=False,
                  show=lambda _p: None, confirm=lambda _q: True,
                  run=lambda _c, plan_id, _again: ran.append(plan_id))
    assert ran == []
    assert load_plan(bed.engine, prepared.plan.id).status == "running"


def test_rollback_reads_power_from_the_bmc_not_from_nova(tmp_path: Path) -> None:
    """Issue 17, defect 1: hosts powered off still read 'up' in Nova (for service_down_time);
    rollback wrote only 'enable' rows, reported 'powered on', counted the hosts twice in its
    header and migrated instances onto hosts whose BMC said off."""
    from consolidator.app.context import AppContext
    from consolidator.app.rollback import prepare_rollback
    from consolidator.emulators.fake.cloud import FakeCloud
    from consolidator.power.bmc_file import load_bmc_file
    from consolidator.power.catalog import driver_for
    from consolidator.scenario.files import parse_scenario
    from consolidator.store.db import upgrade
    from consolidator.store.plans import set_status
    from consolidator.store.snapshots import load_snapshot
    from tests.functional.test_executor import PACKED, scenario

    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    with FakeCloud(parse_scenario(scenario()), bmc=True, migration_bandwidth_mb_s=1e6,
                   service_up_delay_s=0.05, service_down_delay_s=60.0,
                   bmc_graceful_delay_s=0.05) as cloud:
        bed = Bed(cloud=cloud, engine=engine, tmp=tmp_path)
        plan = bed.plan()
        before = load_snapshot(engine, bed.snapshot_id)
        assert bed.run(plan).ok
        conn = cloud.connect()
        for host in ("c3", "c4", "c5"):       # as a power cut without fencing leaves them
            Nova(conn).force_down(host, False)
        assert {s.host: s.state for s in conn.compute.services()}["c3"] == "up"
        configs = load_bmc_file(tmp_path / "bmc.yaml")
        ctx = AppContext.of(config=PACKED, engine=engine, connect=cloud.connect,
                            power=lambda h: driver_for(configs[h]) if h in configs else None)
        prepared = prepare_rollback(ctx, before.info.id)
        assert prepared.plan is not None
        draft = prepared.plan.draft
        assert set(draft.power_on) == {"c3", "c4", "c5"}
        assert (draft.hosts_before, draft.hosts_after) == (2, 5)
        set_status(engine, prepared.plan.id, "approved")
        outcome = bed.executor().run(prepared.plan)
        assert outcome.ok, outcome
        assert sorted(outcome.powered_on) == ["c3", "c4", "c5"]
        rows = [(e.action, e.target) for e in journal.entries(engine, plan_id=prepared.plan.id)]
        assert {("power_on", h) for h in ("c3", "c4", "c5")} <= set(rows)
        for host in ("c3", "c4", "c5"):
            assert cloud.power(host) == "on"
        for inst in before.cluster.instances:
            assert cloud.server_host(inst.id) == inst.host
