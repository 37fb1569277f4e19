"""Issue 23, points 6, 7, 8 and 12: rollback covers everything consolidator did, from the
journaled intent; a BMC that cannot be read is never taken for 'on'; a snapshot not read from
this cloud is refused; a second executor is turned away before anything is stored or shown.

Each test ends by checking that the rollback left the cloud as its snapshot recorded it,
except for the hosts an operator changed (``assert_as_recorded``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from consolidator.app.context import AppContext
from consolidator.app.rollback import RollbackRun, roll_back
from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Cluster
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.execution.executor import Executor, ExecutorSettings, Outcome
from consolidator.openstack.nova import Nova
from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.scenario.files import parse_scenario
from consolidator.store import journal
from consolidator.store.leases import LeaseHeldError, acquire
from consolidator.store.plans import list_plans, load_plan
from consolidator.store.snapshots import list_snapshots, load_snapshot
from tests.functional.test_executor import PACKED, Bed, bed, scenario  # noqa: F401


class Killed(BaseException):
    """kill -9 at this point: nothing after it runs, nothing is journaled."""


class Dies:
    """A BMC driver whose process is killed at the power-off, before or after asking the
    BMC: the power_off row stays running."""

    def __init__(self, driver: Any, *, after_asking: bool) -> None:
        self.driver, self.config, self.after_asking = driver, driver.config, after_asking
        self.host = driver.host

    def power_state(self) -> str:
        return self.driver.power_state()

    def identity(self) -> dict[str, str]:          # the BMC pre-flight reads it
        return self.driver.identity()

    def expected_identity(self) -> dict[str, str]:
        return self.driver.expected_identity()

    def power_on(self, **kw: Any) -> str:
        return self.driver.power_on(**kw)

    def power_off(self, **kw: Any) -> str:
        if self.after_asking:
            self.driver.power_off(**kw)
        raise Killed


@dataclass
class Rig(Bed):
    """The executor's bed, with a context that reads the BMCs as the commands do."""

    def ctx(self, **kw: Any) -> AppContext:
        configs = self.bmc_configs()
        return AppContext.of(config=PACKED, engine=self.engine, connect=self.cloud.connect,
                             power=lambda h: driver_for(configs[h]) if h in configs else None,
                             **kw)

    def bmc_configs(self) -> dict:
        path = self.cloud.write_bmc_yaml(self.tmp / "bmc.yaml")
        doc = yaml.safe_load(path.read_text())
        doc.setdefault("defaults", {}).update({"timeout": 5, "read_attempts": 1})
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)
        return load_bmc_file(path)

    def rollback(self, snapshot_id: str, ctx: AppContext | None = None,
                 shown: list | None = None) -> RollbackRun:
        ctx = ctx or self.ctx()

        def run(c: AppContext, plan_id: str, again: bool) -> Outcome:
            plan = load_plan(self.engine, plan_id)
            snap = load_snapshot(self.engine, plan.snapshot_id)
            executor = Executor(self.engine, Nova(self.cloud.connect()), snap.info.cloud,
                                snap.cluster, ExecutorSettings(poll_interval=0.02,
                                                               power_timeout=10),
                                c.power_lookup())
            return executor.run(plan, resume=again)
        return roll_back(ctx, snapshot_id, partial=False, resume=False, dry_run=False,
                         show=(shown.append if shown is not None else lambda _p: None),
                         confirm=lambda _q: True, run=run)


@pytest.fixture
def rig(bed: Bed) -> Rig:  # noqa: F811 - the executor's bed
    return Rig(cloud=bed.cloud, engine=bed.engine, tmp=bed.tmp)


def assert_as_recorded(cloud: FakeCloud, recorded: Cluster,
                       operator_changed: frozenset[str] = frozenset()) -> None:
    """The live cloud matches the snapshot: every host's power, service status and reason,
    every instance on its host; hosts an operator changed are left out (and nothing of the
    snapshot was moved onto them)."""
    live = {h.name: h for h in cloud.cluster().hosts}
    for host in recorded.hosts:
        if host.name in operator_changed:
            continue
        now = live[host.name]
        assert (cloud.power(host.name), now.status, now.disabled_reason) == \
            (host.power, host.status, host.disabled_reason), host.name
    for inst in recorded.instances:
        if inst.host in operator_changed:
            continue
        assert cloud.server_host(inst.id) == inst.host, inst.name


def services(cloud: FakeCloud) -> dict[str, Any]:
    return {s.host: s for s in cloud.connect().compute.services()}


# -- point 6: everything consolidator did, succeeded or not --------------------------------


def test_a_power_off_refused_by_the_bmc_is_rolled_back(rig: Rig) -> None:
    """The BMC refused its login: the host was emptied and left disabled. Rollback said 'left
    alone, not disabled or powered off by consolidator', moved nothing back, exit 0."""
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    rig.cloud.add_fault({"type": "bmc_auth_fails", "host": "c5"})
    rig.run(plan)
    rig.cloud.clear_faults()
    done = rig.rollback(before.info.id)
    assert done.outcome is not None and done.outcome.ok, done.outcome
    assert_as_recorded(rig.cloud, before.cluster)


def _crash_between_disable_and_power_off(rig: Rig) -> tuple[Any, Any]:
    """Run a plan whose process dies right after c5's disable row succeeded (kill -9
    between the disable and the power-off): c5 empty, disabled with consolidator's reason,
    on, and no power_off row."""
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    executor = rig.executor()
    real = executor.guarded.nova

    class Dying(Nova):
        def set_service(self, host: str, *, enabled: bool, reason: str | None = None,
                        before_request: Any = None) -> None:
            real.set_service(host, enabled=enabled, reason=reason,
                             before_request=before_request)
            if host == "c5" and not enabled:
                raise Killed
    executor.guarded.nova = Dying(rig.cloud.connect())
    with pytest.raises(Killed):
        executor.run(plan)
    return plan, before


def test_kill_9_between_the_disable_and_the_power_off_is_rolled_back(rig: Rig) -> None:
    plan, before = _crash_between_disable_and_power_off(rig)
    assert services(rig.cloud)["c5"].status == "disabled"
    assert not [e for e in journal.entries(rig.engine, plan_id=plan.id)
                if e.action == "power_off" and e.target == "c5"]
    done = rig.rollback(before.info.id)
    assert done.outcome is not None and done.outcome.ok, done.outcome
    assert_as_recorded(rig.cloud, before.cluster)


def test_kill_9_during_the_power_off_is_rolled_back(rig: Rig) -> None:
    """The BMC was asked, the process died before the row was finished: the host is off,
    disabled, not fenced, and its power_off row still reads running."""
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    executor = rig.executor()
    lookup = executor.power
    executor.power = lambda h: Dies(lookup(h), after_asking=True) if h == "c4" else lookup(h)
    with pytest.raises(Killed):
        executor.run(plan)
    rows = [(e.action, e.state) for e in journal.entries(rig.engine, plan_id=plan.id)
            if e.target == "c4"]
    assert ("power_off", journal.RUNNING) in rows and rig.cloud.power("c4") == "off"
    done = rig.rollback(before.info.id)
    assert done.outcome is not None and done.outcome.ok, done.outcome
    assert_as_recorded(rig.cloud, before.cluster)


def test_kill_9_during_a_live_migration_is_rolled_back_once_it_settles(rig: Rig) -> None:
    """Seen on real Nova: the killed apply's live migration went on; rollback, run at once,
    saw the instance MIGRATING, left it ('not ACTIVE'), said succeeded, and the instance
    then landed on the plan's destination. Rollback now waits for it, then moves it back."""
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    victim = plan.draft.migrations[0]
    rig.cloud.add_fault({"type": "migration_slow", "instance": victim.instance_name,
                         "seconds": 8.0, "count": 1})
    executor = rig.executor()
    real = executor.nova

    class DiesAfterThePost(Nova):
        def live_migrate(self, server_id: str, compute_host: str, *,
                         before_request: Any = None) -> None:
            real.live_migrate(server_id, compute_host, before_request=before_request)
            raise Killed
    executor.nova = DiesAfterThePost(rig.cloud.connect())
    with pytest.raises(Killed):
        executor.run(plan)
    assert rig.cloud.server_status(victim.instance_id) == "MIGRATING"
    done = rig.rollback(before.info.id)
    assert done.outcome is not None and done.outcome.ok, done.outcome
    assert rig.cloud.server_status(victim.instance_id) == "ACTIVE"   # nothing still moving
    assert_as_recorded(rig.cloud, before.cluster)


# -- point 7: unknown power is read again, never taken for 'on' ------------------------------


def test_a_bmc_that_stays_unreadable_leaves_its_host_disabled_and_says_so(rig: Rig) -> None:
    """Rollback enabled a host that was off and forced down because its BMC could not be
    read, and cleared consolidator's reason: neither a ramp nor a rollback found it again."""
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    assert rig.run(plan).ok
    rig.cloud.add_fault({"type": "bmc_unreachable", "host": "c3"})
    shown: list = []
    done = rig.rollback(before.info.id, shown=shown)
    assert done.outcome is not None and not done.outcome.ok
    assert "cannot be read" in done.outcome.left_on["c3"]
    assert any("c3" in note and "cannot be read" in note for note in shown[0].notes)
    c3 = services(rig.cloud)["c3"]
    assert c3.status == "disabled" and c3.disabled_reason.startswith("consolidator:")
    assert rig.cloud.power("c3") == "off"
    assert load_plan(rig.engine, done.plan_id).status == "failed"
    # the BMC answers again: the next rollback finds the host and finishes the job
    rig.cloud.clear_faults()
    again = rig.rollback(before.info.id)
    assert again.outcome is not None and again.outcome.ok, again.outcome
    assert_as_recorded(rig.cloud, before.cluster)


def test_unknown_power_at_planning_is_read_again_when_the_rollback_runs(rig: Rig) -> None:
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    assert rig.run(plan).ok
    rig.cloud.add_fault({"type": "bmc_unreachable", "host": "c4"})
    ctx = rig.ctx()
    from consolidator.app.rollback import prepare_rollback

    prepared = prepare_rollback(ctx, before.info.id)
    assert prepared.plan is not None and "c4" in prepared.plan.draft.power_on
    rig.cloud.clear_faults()                  # the BMC answers by the time the run starts
    from consolidator.store.plans import set_status

    set_status(rig.engine, prepared.plan.id, "approved")
    outcome = rig.executor().run(load_plan(rig.engine, prepared.plan.id))
    assert outcome.ok, outcome
    assert_as_recorded(rig.cloud, before.cluster)


def test_an_operator_disabled_host_is_left_as_the_operator_left_it(rig: Rig) -> None:
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    assert rig.run(plan).ok
    Nova(rig.cloud.connect()).set_service("c4", enabled=False, reason="DIMM errors")
    done = rig.rollback(before.info.id)
    assert done.outcome is not None and done.outcome.ok, done.outcome
    assert services(rig.cloud)["c4"].disabled_reason == "DIMM errors"
    assert rig.cloud.power("c4") == "off"
    assert_as_recorded(rig.cloud, before.cluster, operator_changed=frozenset({"c4"}))


# -- point 8: a snapshot not read from this cloud -------------------------------------------


def test_a_snapshot_recorded_from_a_scenario_file_is_refused(rig: Rig, tmp_path: Path
                                                             ) -> None:
    from consolidator.app.snapshots import record_scenario

    path = tmp_path / "edited.yaml"
    doc = scenario()
    doc["instances"][0]["host"] = "c5"
    path.write_text(yaml.safe_dump(doc))
    snap = record_scenario(rig.ctx(), str(path))
    with pytest.raises(ConsolidatorError) as refused:
        rig.rollback(snap.info.id)
    assert "scenario" in str(refused.value) and "\n" not in str(refused.value)
    assert rig.cloud.server_host("vm-1-0") == "c1"
    assert not list_plans(rig.engine, status=None)


def test_a_snapshot_of_another_cloud_is_refused(rig: Rig, tmp_path: Path) -> None:
    """Same cloud name, another deployment: rc 0 and 'nothing to do' next to '10 instances
    of the snapshot no longer exist'."""
    with FakeCloud(parse_scenario(scenario()), bmc=True) as other:
        elsewhere = AppContext.of(config=PACKED, engine=rig.engine, connect=other.connect)
        from consolidator.app.snapshots import record_snapshot

        snap, _ = record_snapshot(elsewhere)
    with pytest.raises(ConsolidatorError) as refused:
        rig.rollback(snap.info.id)
    message = str(refused.value)
    assert "another cloud" in message and "\n" not in message
    assert not list_plans(rig.engine, status=None)


def test_a_plan_made_from_another_cloud_s_snapshot_is_not_run(rig: Rig) -> None:
    """Nothing acts on a snapshot that was not read from the same cloud: a plan of another
    cloud of the same name is refused before its first move."""
    from consolidator.app.apply import PlanRun
    from consolidator.app.planning import PlanRequest, make_plan
    from consolidator.app.review import approve
    from consolidator.app.snapshots import record_snapshot

    with FakeCloud(parse_scenario(scenario()), bmc=True) as other:
        elsewhere = AppContext.of(config=PACKED, engine=rig.engine, connect=other.connect)
        snap, _ = record_snapshot(elsewhere)
        plan = make_plan(elsewhere, snap, PlanRequest(algorithm="firstfit"))
        approve(elsewhere, plan.id, reason="test")
    with pytest.raises(ConsolidatorError) as refused:
        PlanRun(rig.ctx(), plan.id)
    assert "another cloud" in str(refused.value)
    assert load_plan(rig.engine, plan.id).status == "approved"


# -- point 12: a second executor is turned away first -------------------------------------


def test_a_second_executor_is_turned_away_before_anything_is_shown_or_stored(rig: Rig
                                                                             ) -> None:
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    assert rig.run(plan).ok
    assert acquire(rig.engine, f"executor:{plan.cloud}", "elsewhere:1:other", 60) is not None
    shown: list = []
    snapshots = len(list_snapshots(rig.engine, cloud=None, limit=100))
    with pytest.raises(LeaseHeldError):
        rig.rollback(before.info.id, shown=shown)
    assert shown == []
    assert len(list_snapshots(rig.engine, cloud=None, limit=100)) == snapshots
    assert [p.algorithm for p in list_plans(rig.engine, status=None)] == ["firstfit"]


def test_apply_with_yes_is_turned_away_before_the_plan_is_approved(rig: Rig) -> None:
    from consolidator.app.apply import check_applicable
    from consolidator.store.plans import save_plan

    plan = rig.plan()
    proposed = save_plan(rig.engine, plan.draft, cloud=plan.cloud,
                         snapshot_id=plan.snapshot_id)
    assert acquire(rig.engine, f"executor:{plan.cloud}", "elsewhere:1:other", 60) is not None
    with pytest.raises(LeaseHeldError):
        check_applicable(rig.ctx(), proposed.id, yes=True, dry_run=False, resume=False)
    assert load_plan(rig.engine, proposed.id).status == "proposed"
