"""The executor against the fake cloud over HTTP, with Redfish BMCs: success and faults.

Every test ends by checking the safety invariants: no instance lost, no powered-off host with
an instance on it, and a journal that explains what happened.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from sqlalchemy import event

from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.snapshots import record_snapshot
from consolidator.core.plan import StoredPlan
from consolidator.core.rollback_plan import rollback_draft
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.execution.executor import Executor, ExecutorSettings, Outcome
from consolidator.openstack.inventory import read_inventory
from consolidator.openstack.nova import Nova
from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.scenario.files import parse_scenario
from consolidator.store import journal
from consolidator.store.db import make_engine, upgrade
from consolidator.store.leases import LeaseHeldError, acquire
from consolidator.store.plans import load_plan, save_plan, set_status
from consolidator.store.snapshots import load_snapshot

#: These tests are about running plans: the packing is kept tight (no host kept for N+1).
PACKED = config_from_sections({"planner": {"n_plus_one": "false"}})


def scenario() -> dict:
    """Five hosts; firstfit empties c3, c4 and c5 into c1 and c2."""
    hosts = [{"name": f"c{n}", "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
              "bmc": {"driver": "redfish"}} for n in range(1, 6)]
    instances = [{"name": f"vm-{h}-{k}", "host": f"c{h}", "vcpus": 2, "memory_mb": 4096,
                  "disk_gb": 20} for h in range(1, 6) for k in range(2)]
    return {"hosts": hosts, "instances": instances}


@dataclass
class Bed:
    """A fake cloud with BMCs, a database, and helpers to plan and run."""

    cloud: FakeCloud
    engine: object
    tmp: Path
    snapshot_id: str = ""

    def plan(self) -> StoredPlan:
        # a lookup given (knowing no BMC): the plan powers hosts off, which the executor,
        # given the BMC file's drivers, does; without any, a plan is migrate-only (issue 27)
        ctx = AppContext.of(config=PACKED, engine=self.engine, connect=self.cloud.connect,
                            power=lambda _host: None)
        snap, _ = record_snapshot(ctx)
        self.snapshot_id = snap.info.id
        plan = make_plan(ctx, snap, PlanRequest(algorithm="firstfit"))
        set_status(self.engine, plan.id, "approved")
        return load_plan(self.engine, plan.id)

    def executor(self, bmc: dict | None = None, **settings: float) -> Executor:
        path = self.cloud.write_bmc_yaml(self.tmp / "bmc.yaml")
        doc = yaml.safe_load(path.read_text())
        doc.setdefault("defaults", {})["timeout"] = 5
        doc["defaults"].update(bmc or {})
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)
        configs = load_bmc_file(path)
        snap = load_snapshot(self.engine, self.snapshot_id)
        return Executor(self.engine, Nova(self.cloud.connect()), snap.info.cloud, snap.cluster,
                        ExecutorSettings(poll_interval=0.02, max_parallel=4,
                                         power_timeout=20, **settings),
                        lambda h: driver_for(configs[h]) if h in configs else None)

    def run(self, plan: StoredPlan, **settings: float) -> Outcome:
        return self.executor(**settings).run(plan)

    def assert_safe(self) -> None:
        """No instance lost; no powered-off host holds an instance."""
        live = self.cloud.cluster()
        assert len(live.instances) == 10
        for host in live.hosts:
            if self.cloud.power(host.name) == "off":
                assert not live.instances_on(host.name), host.name


@contextmanager
def fake_bed(tmp_path: Path, doc: dict | None = None, **settings: float) -> Iterator[Bed]:
    """A Bed on a new database and a fake cloud of `doc` (default: scenario()) with BMCs;
    settings override the fast defaults (migration bandwidth, delays)."""
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    options = {"migration_bandwidth_mb_s": 1e6, "service_up_delay_s": 0.05,
               "bmc_graceful_delay_s": 0.05, **settings}
    with FakeCloud(parse_scenario(doc or scenario()), bmc=True, **options) as cloud:
        yield Bed(cloud=cloud, engine=engine, tmp=tmp_path)


@pytest.fixture
def bed(tmp_path: Path) -> Iterator[Bed]:
    with fake_bed(tmp_path) as made:
        yield made


def states(bed: Bed, plan: StoredPlan) -> list[tuple[str, str, str]]:
    return [(e.action, e.target, e.state) for e in journal.entries(bed.engine, plan_id=plan.id)]


def test_plan_runs_to_hosts_powered_off(bed: Bed) -> None:
    plan = bed.plan()
    assert set(plan.draft.power_off) == {"c3", "c4", "c5"}
    outcome = bed.run(plan)
    assert outcome.ok and sorted(outcome.powered_off) == ["c3", "c4", "c5"]
    stored = load_plan(bed.engine, plan.id)
    assert stored.status == "succeeded"
    for move in plan.draft.migrations:
        assert bed.cloud.server_host(move.instance_id) == move.destination
    for host in plan.draft.power_off:
        assert bed.cloud.power(host) == "off"
    services = {s.host: s for s in bed.cloud.connect().compute.services()}
    assert services["c3"].status == "disabled" and plan.id in services["c3"].disabled_reason
    assert services["c3"].state == "down" and services["c3"].is_forced_down
    rows = states(bed, plan)
    assert [r for r in rows if r[2] != journal.SUCCEEDED] == []
    assert {r[0] for r in rows} == {"migrate", "disable", "power_off", "force_down"}
    bed.assert_safe()


def test_failed_migration_keeps_instance_and_host(bed: Bed) -> None:
    plan = bed.plan()
    victim = next(m for m in plan.draft.migrations if m.source == "c4")
    bed.cloud.add_fault({"type": "migration_fails", "instance": victim.instance_name})
    outcome = bed.run(plan)
    assert victim.instance_name in outcome.failed
    assert bed.cloud.server_host(victim.instance_id) == "c4"
    assert bed.cloud.power("c4") == "on" and "c4" in outcome.left_on
    assert bed.cloud.power("c3") == "off" and bed.cloud.power("c5") == "off"
    stored = load_plan(bed.engine, plan.id)
    assert stored.status == "failed" and victim.instance_name in stored.reason
    assert ("migrate", victim.instance_id, journal.FAILED) in states(bed, plan)
    bed.assert_safe()


def test_hanging_migration_times_out(bed: Bed) -> None:
    plan = bed.plan()
    victim = next(m for m in plan.draft.migrations if m.source == "c5")
    bed.cloud.add_fault({"type": "migration_hangs", "instance": victim.instance_name})
    outcome = bed.run(plan, migration_timeout=1.0)
    assert "timed out" in outcome.failed[victim.instance_name]
    assert bed.cloud.power("c5") == "on"
    assert load_plan(bed.engine, plan.id).status == "failed"
    bed.assert_safe()


def test_conflict_on_the_action_is_a_failure_with_its_reason(bed: Bed) -> None:
    plan = bed.plan()
    bed.cloud.add_fault({"type": "http_error", "method": "POST", "status": 409, "count": 1,
                         "path": "/compute/v2.1/servers/*/action"})
    outcome = bed.run(plan)
    assert len(outcome.failed) == 1
    reason = next(iter(outcome.failed.values()))
    assert "HTTP 409" in reason
    assert len(outcome.left_on) == 1 and len(outcome.powered_off) == 2
    bed.assert_safe()


@pytest.mark.parametrize("path", ["/compute/v2.1/servers/*", "/compute/v2.1/os-services",
                                  "/compute/v2.1/servers/detail"])
def test_transient_5xx_on_reads_and_lists_is_retried(bed: Bed, path: str) -> None:
    plan = bed.plan()
    bed.cloud.add_fault({"type": "http_error", "method": "GET", "status": 503, "count": 2,
                         "path": path})
    outcome = bed.run(plan)
    assert outcome.ok
    assert any(r["status"] == 503 for r in bed.cloud.requests(path, "GET"))  # it did fail
    bed.assert_safe()


def test_a_second_executor_is_refused_naming_the_holder(bed: Bed) -> None:
    plan = bed.plan()
    executor = bed.executor()
    assert acquire(bed.engine, f"executor:{executor.cloud}", "other-host:4242:abcd", 60)
    with pytest.raises(LeaseHeldError, match="other-host:4242:abcd"):
        executor.run(plan)
    assert load_plan(bed.engine, plan.id).status == "approved"
    assert all(bed.cloud.power(h.name) == "on" for h in bed.cloud.cluster().hosts)


def test_bmc_refusing_the_password_keeps_its_host_from_being_emptied(bed: Bed) -> None:
    """Issue 23, point 10: a host whose BMC refused the login was emptied, then left
    disabled and on. The pre-flight now logs in first: the host is not emptied at all."""
    plan = bed.plan()
    bed.cloud.add_fault({"type": "bmc_auth_fails", "host": "c3"})
    outcome = bed.run(plan)
    assert "its BMC failed the pre-flight" in outcome.left_on["c3"]
    assert "authentication refused" in outcome.left_on["c3"]
    assert bed.cloud.power("c3") == "on"
    assert len(bed.cloud.cluster().instances_on("c3")) == 2
    assert ("bmc_preflight", "c3", journal.FAILED) in states(bed, plan)
    assert not [r for r in states(bed, plan) if r[1] == "c3" and r[0] != "bmc_preflight"]
    services = {s.host: s for s in bed.cloud.connect().compute.services()}
    assert services["c3"].status == "enabled"
    assert sorted(outcome.powered_off) == ["c4", "c5"]
    assert "password" not in " ".join(e.result or "" for e in journal.entries(bed.engine))
    bed.assert_safe()


def test_a_power_off_that_fails_after_the_preflight_enables_the_host_again(bed: Bed) -> None:
    """Issue 23, point 10: the BMC passed the pre-flight, then refused the power-off: the
    (empty, on) host is enabled again, journaled, and the reason says how to recover."""
    plan = bed.plan()
    executor = bed.executor()

    def report(line: str) -> None:
        if line == "  power off c3":
            bed.cloud.add_fault({"type": "bmc_auth_fails", "host": "c3"})
    executor.report = executor.guarded.report = report
    outcome = executor.run(plan)
    assert "authentication refused" in outcome.left_on["c3"]
    assert "left on and enabled again" in outcome.left_on["c3"]
    assert "consolidator bmc-check" in outcome.left_on["c3"]
    assert bed.cloud.power("c3") == "on" and not bed.cloud.cluster().instances_on("c3")
    services = {s.host: s for s in bed.cloud.connect().compute.services()}
    assert services["c3"].status == "enabled"
    rows = [(e.action, e.state, e.result or "") for e in journal.entries(bed.engine)
            if e.target == "c3"]
    assert [r[:2] for r in rows][-3:] == [("disable", journal.SUCCEEDED),
                                          ("power_off", journal.FAILED),
                                          ("enable", journal.SUCCEEDED)]
    enabled = [e for e in journal.entries(bed.engine) if e.target == "c3"][-1]
    assert "power-off failed" in enabled.params["why"] and "still on" in enabled.params["why"]
    assert "c3" in load_plan(bed.engine, plan.id).reason
    bed.assert_safe()


def test_bmc_that_does_not_answer_keeps_its_host_from_being_emptied(bed: Bed) -> None:
    plan = bed.plan()
    bed.cloud.add_fault({"type": "bmc_unreachable", "host": "c5"})
    outcome = bed.run(plan)     # returns (the unreachable BMC does not hang the run)
    assert "c5" in outcome.left_on and bed.cloud.power("c5") == "on"
    assert ("bmc_preflight", "c5", journal.FAILED) in states(bed, plan)
    assert len(bed.cloud.cluster().instances_on("c5")) == 2
    assert sorted(outcome.powered_off) == ["c3", "c4"]
    bed.cloud.clear_faults()
    bed.assert_safe()


def test_rollback_after_a_partly_failed_plan(bed: Bed) -> None:
    plan = bed.plan()
    before = load_snapshot(bed.engine, bed.snapshot_id)
    victim = next(m for m in plan.draft.migrations if m.source == "c4")
    bed.cloud.add_fault({"type": "migration_fails", "instance": victim.instance_name})
    bed.run(plan)
    live = read_inventory(bed.cloud.connect()).cluster
    draft = rollback_draft(before.cluster, live)
    assert set(draft.power_on) == {"c3", "c5"}
    back_id = save_plan(bed.engine, draft, cloud=before.info.cloud, snapshot_id=before.info.id).id
    set_status(bed.engine, back_id, "approved")
    outcome = bed.executor().run(load_plan(bed.engine, back_id))
    assert outcome.ok, outcome
    for inst in before.cluster.instances:
        assert bed.cloud.server_host(inst.id) == inst.host
    for host in before.cluster.hosts:
        assert bed.cloud.power(host.name) == "on"
    services = {s.host: s for s in bed.cloud.connect().compute.services()}
    assert all(services[h.name].status == "enabled" for h in before.cluster.hosts)
    again = rollback_draft(before.cluster, read_inventory(bed.cloud.connect()).cluster)
    assert again.migrations == () and again.power_on == ()
    bed.assert_safe()


@pytest.mark.parametrize("on_timeout", ["abort", "force-complete"])
def test_a_migration_that_outlives_its_timeout_is_aborted_or_forced(bed: Bed,
                                                                     on_timeout: str) -> None:
    """A hanging live migration is not left running: at the timeout it is aborted through
    Nova (the instance stays on its source, the record ends cancelled, the source host stays
    on) or forced to complete; the journal says which."""
    plan = bed.plan()
    victim = next(m for m in plan.draft.migrations if m.source == "c4")
    bed.cloud.add_fault({"type": "migration_hangs", "instance": victim.instance_name})
    outcome = bed.run(plan, migration_timeout=1.0, on_timeout=on_timeout)
    actions = [(e.action, e.state) for e in journal.entries(bed.engine)
               if e.target == victim.instance_id]
    record = bed.cloud.state.summary()["migrations"]
    mine = [r for r in record if r["server_id"] == victim.instance_id]
    if on_timeout == "abort":
        assert ("abort", journal.SUCCEEDED) in actions
        assert "aborted it through Nova" in outcome.failed[victim.instance_name]
        assert mine[-1]["status"] == "cancelled"
        assert bed.cloud.server_host(victim.instance_id) == "c4"
        assert "c4" in outcome.left_on and bed.cloud.power("c4") == "on"
    else:
        assert ("force_complete", journal.SUCCEEDED) in actions
        assert victim.instance_name not in outcome.failed
        assert mine[-1]["status"] == "completed"
        assert bed.cloud.server_host(victim.instance_id) == victim.destination
    bed.assert_safe()


def test_migrations_into_one_host_respect_the_per_destination_limit(bed: Bed) -> None:
    """With max_per_destination 1, the journal shows no two migrations into one host at once,
    even with max_parallel 4."""
    plan = bed.plan()
    into = [m.destination for m in plan.draft.migrations if m.wave == 1]
    assert len(into) > len(set(into))          # several arrive at one host in one wave
    outcome = bed.run(plan, max_per_destination=1)
    assert outcome.ok, outcome
    spans: dict[str, list] = {}
    for e in journal.entries(bed.engine, plan_id=plan.id):
        if e.action == "migrate":
            spans.setdefault(e.params["destination"], []).append((e.started_at, e.finished_at))
    for dest, times in spans.items():
        times.sort()
        for (_, end), (start, _) in zip(times, times[1:], strict=False):
            assert start >= end, dest


def fail_next_lease_update(engine: object, armed: threading.Event) -> list[float]:
    """Make the next UPDATE of the leases table fail with a database error once armed;
    returns the list that gets the time of that failure."""
    failed_at: list[float] = []

    def before(conn: object, cursor: object, statement: str, *_args: object) -> None:
        if armed.is_set() and not failed_at and statement.lstrip().upper().startswith(
                "UPDATE LEASES"):
            failed_at.append(time.monotonic())
            raise sqlite3.OperationalError("disk I/O error (injected)")

    event.listen(engine, "before_cursor_execute", before)
    return failed_at


def test_a_failed_lease_renewal_stops_the_run_before_its_next_destructive_call(
        tmp_path: Path) -> None:
    """One database error in the heartbeat: the lease counts as lost, the migration under
    way finishes, and nothing else is started (no migration, disable or power call)."""
    with fake_bed(tmp_path, migration_bandwidth_mb_s=4096) as bed:
        engine, cloud = bed.engine, bed.cloud
        plan = bed.plan()
        armed = threading.Event()
        failed_at = fail_next_lease_update(engine, armed)
        executor = bed.executor(lease_ttl=0.6)
        executor.settings = dataclasses.replace(executor.settings, max_parallel=1)
        executor.report = lambda line: armed.set() if line.startswith("  migrate") else None
        outcome = executor.run(plan)
        assert failed_at, "the renewal was never made to fail"
        assert outcome.interrupted and not outcome.ok
        assert "lost the executor lease" in " ".join(outcome.skipped.values())
        calls = [e for e in journal.entries(engine, plan_id=plan.id)
                 if e.state != journal.SKIPPED]
        assert [(e.action, e.state) for e in calls] == [("migrate", journal.SUCCEEDED)]
        assert len(cloud.requests("/compute/v2.1/servers/*/action", "POST")) == 1
        assert all(cloud.power(h.name) == "on" for h in cloud.cluster().hosts)
        assert all(s.status == "enabled" for s in cloud.connect().compute.services())
        bed.assert_safe()
