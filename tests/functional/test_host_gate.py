"""Issue 33: safety by construction. Every actor asks one gate right before each enable,
disable, power or migration step; the gate re-reads the live facts and applies one rule set
(execution/gate.py, core/host_gate.py). Each test replays one reproduced case on the fake
cloud (real openstacksdk, real Redfish BMCs) and ends on the invariants: no powered-off host
holds a server, nothing moves onto a held, drained, excluded or going-down host.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from consolidator.app.apply import PlanRun, check_applicable
from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.app.drain_hosts import DrainRequest, plan_drain, undrain
from consolidator.app.rollback import prepare_rollback
from consolidator.core import host_gate as hg
from consolidator.core.errors import UsageError
from consolidator.core.plan import PlanDraft
from consolidator.execution.executor import Executor, ExecutorSettings, Outcome
from consolidator.openstack.nova import Nova
from consolidator.store import host_states, journal
from consolidator.store.leases import acquire
from consolidator.store.plans import load_plan, set_status
from consolidator.store.snapshots import load_snapshot
from consolidator.store.tables import leases
from tests.functional.test_executor import Bed, fake_bed
from tests.functional.test_executor import bed as bed  # noqa: F401 - the fixture
from tests.functional.test_pending_shutdown import killed_in_its_shutdown
from tests.functional.test_power_recheck import build_during_grace
from tests.functional.test_power_safety import assert_no_work_on_a_powered_off_host
from tests.functional.test_rollback_intent import Rig
from tests.functional.test_rollback_intent import rig as rig  # noqa: F401 - the fixture

RMA = "DIMM errors: RMA, keep off"


def disable_by_operator(bed: Bed, host: str, reason: str) -> None:
    """What an operator's 'openstack compute service set --disable --disable-reason' does
    (PUT os-services/{id} with status disabled and the reason)."""
    Nova(bed.cloud.connect()).set_service(host, enabled=False, reason=reason)


def service_of(bed: Bed, host: str) -> Any:
    return next(s for s in bed.cloud.connect().compute.services() if s.host == host)


def with_config(rig: Rig, config: Any) -> AppContext:
    """The rig's context (its BMCs), with another config."""
    return AppContext.of(config=config, engine=rig.engine, connect=rig.cloud.connect,
                         power=rig.ctx().power_lookup())


def rollback_run(rig: Rig, plan_id: str, *, power_timeout: float = 10.0,
                 resume: bool = False) -> Outcome:
    """Run a stored rollback plan as 'rollback' does (approved, the executor)."""
    set_status(rig.engine, plan_id, "approved")
    plan = load_plan(rig.engine, plan_id)
    snap = load_snapshot(rig.engine, plan.snapshot_id)
    return Executor(rig.engine, Nova(rig.cloud.connect()), snap.info.cloud, snap.cluster,
                    ExecutorSettings(poll_interval=0.02, power_timeout=power_timeout),
                    rig.ctx().power_lookup()).run(plan, resume=resume)


def steal_lease(engine: Any, cloud: str) -> None:
    """What another process does once this one was paused past its lease: the lease has
    expired, and it takes it (a new generation)."""
    name = f"executor:{cloud}"
    with engine.begin() as conn:
        conn.execute(update(leases).where(leases.c.name == name).values(
            expires_at=leases.c.acquired_at))
    assert acquire(engine, name, "holder-intruder", 600) is not None


# -- case 5: the operator's hold is re-read at the moment of the step ----------------------


def test_a_rollback_leaves_a_host_the_operator_disabled_at_its_prompt_off(rig: Rig  # noqa: F811
                                                                          ) -> None:
    """Case 5: the rollback was planned with c3 to power on; while it waited at its prompt
    the operator disabled c3 ("DIMM errors: RMA, keep off"). It powered c3 on, enabled it and
    moved its instances onto it. The gate now re-reads the reason when the step runs."""
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    assert rig.run(plan).ok
    assert rig.cloud.power("c3") == "off"
    prepared = prepare_rollback(rig.ctx(), before.info.id)
    assert prepared.plan is not None and "c3" in prepared.plan.draft.power_on
    disable_by_operator(rig, "c3", RMA)                 # while the prompt waits
    outcome = rollback_run(rig, prepared.plan.id)
    assert rig.cloud.power("c3") == "off"
    service = service_of(rig, "c3")
    assert service.status == "disabled" and service.disabled_reason == RMA
    assert not rig.cloud.cluster().instances_on("c3")
    assert "held by the operator" in outcome.left_on["c3"], outcome.left_on
    assert host_states.recorded(rig.engine, before.info.endpoint, "c3").state == hg.HELD
    for name in ("c4", "c5"):                            # the other hosts came back
        assert rig.cloud.power(name) == "on" and service_of(rig, name).status == "enabled"
    assert_no_work_on_a_powered_off_host(rig.cloud.state.summary())


def test_a_plan_leaves_a_host_drained_since_it_was_approved_alone(bed: Bed) -> None:  # noqa: F811
    """Case 1 at the gate: a relief or ramp plan approved before c3 was drained would power
    it on and enable it when run. A drained host comes back only through its undrain."""
    from consolidator.core.maintenance import drain_reason
    from consolidator.store.plans import save_plan

    plan = bed.plan()
    assert bed.run(plan).ok and bed.cloud.power("c3") == "off"
    snap = load_snapshot(bed.engine, bed.snapshot_id)
    draft = PlanDraft(algorithm="relief", ranking="ucac", migrations=(),
                                 power_off=(), power_on=("c3",), hosts_before=2,
                                 hosts_after=3, lower_bound=0, migrations_lower_bound=0,
                                 spare=0)
    relief = save_plan(bed.engine, draft, cloud=snap.info.cloud, snapshot_id=snap.info.id,
                       supersede=False)
    set_status(bed.engine, relief.id, "approved")
    disable_by_operator(bed, "c3", drain_reason("0badc0de-drain"))
    outcome = bed.run(load_plan(bed.engine, relief.id))
    assert "is drained" in outcome.left_on["c3"], outcome.left_on
    assert bed.cloud.power("c3") == "off" and service_of(bed, "c3").status == "disabled"


# -- case 7: a plan the operator rolled back is not resumed by hand ------------------------


def test_apply_resume_refuses_a_plan_the_operator_has_since_rolled_back(rig: Rig  # noqa: F811
                                                                        ) -> None:
    """Case 7: interrupt an apply, roll back to its snapshot, then 'apply --resume PLAN': it
    re-ran every migration and powered hosts off, without a word. It is now refused, as the
    daemon refuses such an overtaken plan."""
    plan = rig.plan()
    before = load_snapshot(rig.engine, rig.snapshot_id)
    executor = rig.executor()

    def report(line: str) -> None:           # Ctrl-C after the first migration
        if line.startswith("  done "):
            executor.stop.set()
    executor.report = report
    outcome = executor.run(plan)
    assert outcome.interrupted and load_plan(rig.engine, plan.id).status == "failed"
    done = rig.rollback(before.info.id)
    assert done.outcome is not None and done.outcome.ok
    moved = {i.name: i.host for i in rig.cloud.cluster().instances}
    with pytest.raises(UsageError, match="overtaken by a rollback"):
        check_applicable(rig.ctx(), plan.id, yes=False, dry_run=False, resume=True)
    assert {i.name: i.host for i in rig.cloud.cluster().instances} == moved


# -- the smaller items ------------------------------------------------------------------------


def test_draining_a_host_the_operator_disabled_keeps_the_operators_reason(rig: Rig  # noqa: F811
                                                                          ) -> None:
    """Draining c3, which the operator had disabled, replaced the operator's reason with the
    drain's, and 'hosts undrain c3' then enabled it. The drain now empties it and keeps the
    reason; undrain says it is not drained."""
    disable_by_operator(rig, "c3", RMA)
    ctx = rig.ctx()
    plan, _ = plan_drain(ctx, DrainRequest(hosts=("c3",)))
    set_status(rig.engine, plan.id, "approved")
    outcome = PlanRun(ctx, plan.id).run()
    assert outcome.ok, outcome
    assert not rig.cloud.cluster().instances_on("c3")
    service = service_of(rig, "c3")
    assert service.status == "disabled" and service.disabled_reason == RMA
    with pytest.raises(UsageError, match="is not drained"):
        undrain(ctx, ("c3",))
    assert service_of(rig, "c3").status == "disabled"


def test_exclusions_added_after_approval_are_kept_when_the_plan_runs(rig: Rig  # noqa: F811
                                                                     ) -> None:
    """An exclusion added to the config after the plan was approved was not checked when it
    ran: c1 received instances. The gate reads the rules the run is given."""
    plan = rig.plan()
    receivers = {m.destination for m in plan.draft.migrations}
    assert "c1" in receivers
    config = config_from_sections({"planner": {"n_plus_one": "false",
                                               "excluded_hosts": "c1"}})
    ctx = with_config(rig, config)
    before = {i.name for i in rig.cloud.cluster().instances_on("c1")}
    outcome = PlanRun(ctx, plan.id).run()
    assert {i.name for i in rig.cloud.cluster().instances_on("c1")} == before
    assert any("excluded by config" in why for why in outcome.skipped.values()), outcome
    assert_no_work_on_a_powered_off_host(rig.cloud.state.summary())


def test_rollback_leaves_pinned_and_excluded_project_instances_the_operator_moved(
        tmp_path: Path) -> None:
    """Rollback moved back an instance pinned with consolidator:exclude=true, and one of an
    excluded project, that the operator had moved; no plan moves either."""
    from tests.functional.test_executor import scenario

    doc = scenario()
    doc["instances"][0]["metadata"] = {"consolidator:exclude": "true"}      # vm-1-0
    doc["instances"][1]["project_id"] = "kept-project"                       # vm-1-1
    with fake_bed(tmp_path, doc) as bed:
        _pinned_and_excluded_stay(Rig(cloud=bed.cloud, engine=bed.engine, tmp=bed.tmp))


def _pinned_and_excluded_stay(rig: Rig) -> None:
    conn = rig.cloud.connect()
    snapshot = rig.plan().snapshot_id          # the cloud as it is, recorded
    nova = Nova(conn)
    servers = {s.name: s for s in conn.compute.servers(all_projects=True)}
    pinned, other = servers["vm-1-0"], servers["vm-1-1"]
    for server in (pinned, other):               # the operator moves both to c2
        nova.live_migrate(server.id, "c2")
    deadline = time.monotonic() + 30
    while {rig.cloud.server_host(s.id) for s in (pinned, other)} != {"c2"}:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    project = other.project_id
    config = config_from_sections({"planner": {"n_plus_one": "false",
                                               "excluded_projects": project}})
    prepared = prepare_rollback(with_config(rig, config), snapshot)
    assert prepared.plan is None or not prepared.plan.draft.migrations
    assert any("not moved back" in n and "vm-1-0" in n for n in prepared.notes)
    assert rig.cloud.server_host(pinned.id) == "c2" and rig.cloud.server_host(other.id) == "c2"


def test_an_az_scoped_capacity_watch_does_not_power_on_a_host_in_another_az(
        tmp_path: Path) -> None:
    """A daemon scoped to az=west powered on and enabled a host in az=east: the usage path
    (the capacity watch's power-on plan, and relief's power-on order) ignored the scope."""
    from consolidator.app.settings import rules_from_config
    from consolidator.core.relief import power_on_order
    from consolidator.store.plans import save_plan
    from tests.functional.test_executor import scenario

    doc = scenario()
    for host in doc["hosts"]:
        host["availability_zone"] = "east" if host["name"] == "c5" else "west"
    doc["hosts"][4].update({"power": "off", "status": "disabled",
                            "disabled_reason": "consolidator: emptied by plan 0 for power-off"})
    doc["instances"] = [i for i in doc["instances"] if i["host"] != "c5"]
    with fake_bed(tmp_path, doc) as bed:
        rig = Rig(cloud=bed.cloud, engine=bed.engine, tmp=bed.tmp)
        rig.plan()                                   # the cloud, recorded
        config = config_from_sections({"planner": {"n_plus_one": "false",
                                                   "scope": "az=west"}})
        ctx = with_config(rig, config)
        live = bed.cloud.cluster()
        snap = load_snapshot(bed.engine, rig.snapshot_id)
        draft = PlanDraft(
            algorithm="ramp", ranking=None, migrations=(), power_off=(),
            power_on=("c5",), hosts_before=2, hosts_after=3, lower_bound=0,
            migrations_lower_bound=0, spare=0, notes=("usage: 9.0 of 8 cores",))
        watch = save_plan(bed.engine, draft, cloud=snap.info.cloud,
                          snapshot_id=rig.snapshot_id, supersede=False)
        set_status(bed.engine, watch.id, "approved")
        outcome = PlanRun(ctx, watch.id).run()
        assert bed.cloud.power("c5") == "off", outcome
        assert "outside the scope az=west" in outcome.left_on["c5"], outcome.left_on
        assert service_of(rig, "c5").status == "disabled"
        assert "c5" not in power_on_order(live, rules=rules_from_config(config))


# -- case 2: a shutdown requested and not confirmed is its own state -----------------------


def test_kill_9_during_a_graceful_shutdown_then_rollback_leaves_no_work_on_an_off_host(
        tmp_path: Path) -> None:
    """Case 2: the graceful delay (8 s) outlasts the lease (1 s). The apply is killed -9
    inside the shutdown; the rollback read the BMC as 'on', enabled the host and moved its
    instances back, and the shutdown then completed: off, holding servers. The rollback now
    waits until the BMC reads off, then powers it on and moves them back."""
    with fake_bed(tmp_path, bmc_graceful_delay_s=8.0) as bed:
        rig = Rig(cloud=bed.cloud, engine=bed.engine, tmp=bed.tmp)
        going, _clouds, _bmc, sent = killed_in_its_shutdown(rig, tmp_path)
        before = load_snapshot(rig.engine, rig.snapshot_id)
        prepared = prepare_rollback(rig.ctx(), before.info.id)
        assert prepared.plan is not None
        outcome = rollback_run(rig, prepared.plan.id, power_timeout=30)
        while time.monotonic() < sent + 10.0:           # the shutdown has had its time
            time.sleep(0.1)
        state = bed.cloud.state.summary()
        assert_no_work_on_a_powered_off_host(state)
        assert bed.cloud.power(going) == "on", outcome
        assert len(bed.cloud.cluster().instances) == 10
        assert len(bed.cloud.cluster().instances_on(going)) == 2, outcome


# -- case 3: the fence right before the BMC request, and a rescue that cannot be refused ----


def test_a_power_off_paused_past_its_lease_sends_nothing(bed: Bed) -> None:  # noqa: F811
    """Case 3: the apply was paused past its lease inside a power-off (after its journal
    row, before the BMC request), another process took the lease, and the apply then shut
    the host down. The lease is now checked right before the request: nothing is sent."""
    plan = bed.plan()
    executor = bed.executor()
    lookup = executor.power
    victim = plan.draft.power_off[0]
    cloud = load_snapshot(bed.engine, bed.snapshot_id).info.cloud

    def paused(name: str) -> Any:
        driver = lookup(name)
        if driver is not None and name == victim:
            real = driver.identity

            def identity() -> dict[str, str]:        # SIGSTOP ... SIGCONT, here
                if any(e.action == "power_off" and e.target == victim
                       and e.state == journal.RUNNING for e in journal.entries(bed.engine)):
                    steal_lease(bed.engine, cloud)
                return real()
            driver.identity = identity
            driver.expected_identity = lambda: {"uuid": real()["uuid"]}
        return driver
    executor.power = paused
    outcome = executor.run(plan)
    assert outcome.interrupted and "lost the executor lease" in outcome.stopped
    assert not bed.cloud.requests(f"/redfish/v1/Systems/{victim}/Actions/ComputerSystem.Reset",
                                  "POST")
    assert bed.cloud.power(victim) == "on"
    row = [e for e in journal.entries(bed.engine, plan_id=plan.id)
           if e.action == "power_off" and e.target == victim][-1]
    assert row.state == journal.SKIPPED and "nothing was sent" in row.result


def test_work_landing_during_a_shutdown_is_rescued_after_the_lease_is_lost(
        tmp_path: Path) -> None:
    """Case 3, the rescue: work landed on c5 during its graceful shutdown and meanwhile the
    lease was lost. The rescue ('work landed, powering it on again') raised LeaseLostError:
    nothing powered c5 on, and the summary said "left on". A rescue now needs no lease, is
    journaled as one, and the outcome says what its power is."""
    with fake_bed(tmp_path, bmc_graceful_delay_s=0.5) as bed:
        plan = bed.plan()
        cloud = load_snapshot(bed.engine, bed.snapshot_id).info.cloud
        landing = build_during_grace(bed, "c5", "vm-1-0")

        def steal() -> None:                      # once the shutdown request is sent
            landing.join(timeout=30)
            path = "/redfish/v1/Systems/c5/Actions/ComputerSystem.Reset"
            deadline = time.monotonic() + 30
            while not bed.cloud.requests(path, "POST") and time.monotonic() < deadline:
                time.sleep(0.005)
            steal_lease(bed.engine, cloud)
        thief = threading.Thread(target=steal, daemon=True)
        thief.start()
        outcome = bed.executor(bmc={"grace": 30}).run(plan)
        thief.join(timeout=10)
        vm = next(i.id for i in bed.cloud.cluster().instances if i.name == "vm-1-0")
        assert bed.cloud.server_host(vm) == "c5"
        assert bed.cloud.power("c5") == "on", outcome
        rescue = [e for e in journal.entries(bed.engine, plan_id=plan.id)
                  if e.target == "c5" and e.action == "power_on"]
        assert rescue and rescue[-1].params.get("rescue") and \
            rescue[-1].state == journal.SUCCEEDED
        assert "c5" not in outcome.not_on
        assert_no_work_on_a_powered_off_host(bed.cloud.state.summary())


# -- case 4: a BMC that accepts the shutdown and then stops answering ----------------------


def test_a_bmc_that_stops_answering_after_accepting_the_shutdown(tmp_path: Path) -> None:
    """Case 4: the BMC accepted c5's shutdown, then stopped answering. The host was enabled
    again while its shutdown was pending, and ended off and enabled with no consolidator
    reason; the rollback then left it alone. It now stays disabled with consolidator's
    reason, in 'powering off', and the rollback powers it on."""
    with fake_bed(tmp_path, bmc_graceful_delay_s=10.0) as bed:
        rig = Rig(cloud=bed.cloud, engine=bed.engine, tmp=bed.tmp)
        plan = rig.plan()
        before = load_snapshot(rig.engine, rig.snapshot_id)

        def vanish() -> None:
            path = "/redfish/v1/Systems/c5/Actions/ComputerSystem.Reset"
            while not bed.cloud.requests(path, "POST"):
                time.sleep(0.01)
            bed.cloud.add_fault({"type": "bmc_unreachable", "host": "c5"})
        watcher = threading.Thread(target=vanish, daemon=True)
        watcher.start()
        outcome = rig.executor(bmc={"read_attempts": 1, "timeout": 1}).run(plan)
        watcher.join(timeout=30)
        deadline = time.monotonic() + 30
        while bed.cloud.power("c5") != "off":          # the shutdown completes
            assert time.monotonic() < deadline
            time.sleep(0.05)
        service = service_of(bed, "c5")
        assert service.status == "disabled", outcome.left_on
        assert (service.disabled_reason or "").startswith("consolidator:")
        assert "c5" in outcome.not_on and "may be going down" in outcome.not_on["c5"]
        assert host_states.recorded(bed.engine, before.info.endpoint, "c5").state == \
            hg.POWERING_OFF
        assert_no_work_on_a_powered_off_host(bed.cloud.state.summary())
        bed.cloud.clear_faults()
        prepared = prepare_rollback(rig.ctx(), before.info.id)
        assert prepared.plan is not None and "c5" in prepared.plan.draft.power_on
        done = rollback_run(rig, prepared.plan.id)
        assert bed.cloud.power("c5") == "on" and done.ok, done
        assert host_states.recorded(bed.engine, before.info.endpoint, "c5").state == \
            hg.IN_SERVICE


# -- case 1: relief and the capacity watch never bring a drained host back -----------------


def test_relief_and_the_capacity_watch_leave_a_drained_host_off(tmp_path: Path) -> None:
    """Case 1: c3 was drained with --power-off; usage then rose above c1's cores. 'daemon
    --once' (relief, then the capacity watch) powered c3 on, enabled it and moved an
    instance onto it. Only 'hosts undrain' brings a drained host back."""
    from consolidator.core.maintenance import drain_reason
    from tests.functional.test_relief import daemon_once, scenario, served

    doc = scenario(c2_cores=2)                       # no room: relief wants a host on
    doc["hosts"][2]["disabled_reason"] = drain_reason("0badc0de-drain")
    with served(doc, tmp_path) as (cloud, prom):
        out, err = daemon_once(cloud, prom, tmp_path)
        assert cloud.power("c3") == "off", out + err
        assert "powering on c3" not in err and "powered on c3" not in out, out + err
        service = next(s for s in cloud.connect().compute.services() if s.host == "c3")
        assert service.status == "disabled" and \
            service.disabled_reason == drain_reason("0badc0de-drain")
        assert not cloud.cluster().instances_on("c3")


def test_a_disable_paused_past_its_lease_after_reading_the_services_sends_nothing(
        bed: Bed) -> None:  # noqa: F811
    """Found by the SQLite long run of issue 45 (seed 22301, job 0, step 25): an apply's
    'disable c3' row checked the lease, then the apply read Nova's services (for the
    service's id) and was paused there past its lease while another holder began its own
    steps; woken up, it disabled c3 anyway, after the other holder's rows had begun
    (invariant two_actors). The lease is now checked again right before the write."""
    plan = bed.plan()
    executor = bed.executor()
    victim = plan.draft.power_off[0]
    cloud = load_snapshot(bed.engine, bed.snapshot_id).info.cloud
    nova = executor.guarded.nova
    real = nova.services

    def services() -> dict[str, Any]:          # SIGSTOP ... SIGCONT, inside this read
        found = real()
        if any(e.action == "disable" and e.target == victim and e.state == journal.RUNNING
               for e in journal.entries(bed.engine)):
            steal_lease(bed.engine, cloud)
        return found
    nova.services = services            # type: ignore[method-assign]
    outcome = executor.run(plan)
    assert outcome.interrupted and "lost the executor lease" in outcome.stopped
    assert service_of(bed, victim).status == "enabled"
    row = [e for e in journal.entries(bed.engine, plan_id=plan.id)
           if e.action == "disable" and e.target == victim][-1]
    assert row.state == journal.SKIPPED and "nothing was sent to Nova" in row.result


def test_an_operators_hold_that_comes_after_the_last_read_of_the_services_stops_the_power_off(
        bed: Bed) -> None:  # noqa: F811
    """Found by the SQLite long run of issue 45 (seed 27301, job 0, step 11): an apply had
    disabled c4 for its power-off and read the service back (still disabled for it); the
    operator then disabled c4 with a reason of their own ("held by the operator"), and the
    apply, which read Nova's services once more for its post-conditions and wrote its journal
    row, powered c4 off (invariant protected_host_disabled). The service is now read again
    at the BMC's last-moment fence, right before the shutdown request."""
    plan = bed.plan()
    executor = bed.executor()
    victim = plan.draft.power_off[0]
    nova = executor.guarded.nova
    real = nova.services
    held: list[bool] = []

    def services() -> dict[str, Any]:          # the operator acts right after this read
        found = real()
        rows = [e for e in journal.entries(bed.engine) if e.target == victim]
        if not held and any(e.action == "disable" and e.state == journal.SUCCEEDED
                            for e in rows):
            disable_by_operator(bed, victim, RMA)
            held.append(True)
        return found
    nova.services = services            # type: ignore[method-assign]
    outcome = executor.run(plan)
    assert held
    assert bed.cloud.power(victim) == "on", outcome
    service = service_of(bed, victim)
    assert service.status == "disabled" and service.disabled_reason == RMA
    row = [e for e in journal.entries(bed.engine, plan_id=plan.id)
           if e.action == "power_off" and e.target == victim][-1]
    assert row.state == journal.SKIPPED and "nothing was sent to its BMC" in row.result, row
    endpoint = load_snapshot(bed.engine, bed.snapshot_id).info.endpoint
    recorded = host_states.recorded(bed.engine, endpoint, victim)
    assert recorded is not None and recorded.state == hg.HELD, recorded
