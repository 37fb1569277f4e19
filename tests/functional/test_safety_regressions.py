"""Unsafe paths of issue 33, each an explicit sequence of steps on the safety test's world
(tests/functional/safety_world.py), checked with the same invariants
(tests/functional/safety_invariants.py) after every step.

Each test names the issue's case and the invariant it breaks on main before the gate of
issue 33; none may break once the gate is in.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.functional.safety_invariants import Violation
from tests.functional.safety_world import DRAIN_REASON, LEASE_TTL, World
from tests.functional.waits import stopped

pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with World(tmp_path / "world") as started:
        yield started


def wait_for(what: str, test: Callable[[], object], timeout: float = 60.0) -> None:
    """Wait until test() is true (a condition, not a time); fail naming `what`."""
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def journal_has(world: World, action: str, target: str, state: str | None = None) -> bool:
    """Whether the journal holds an action on a target (in that state)."""
    return any(r.action == action and r.target == target and state in (None, r.state)
               for r in world.facts().journal)


def _none(found: list[Violation]) -> None:
    assert not found, "invariants broken:\n" + "\n".join(str(v) for v in found)


def step(world: World) -> None:
    """Check the invariants after a step: none broken so far."""
    world.observe()
    _none(world.violations)


def settled(world: World) -> None:
    """Wait for everything to end, then check the invariants: none broken so far."""
    world.observe(settle=True)
    _none(world.violations)


def overload_all(world: World) -> None:
    """Usage above the cores on every host consolidator may use."""
    for host in ("c1", "c2", "c3", "c4"):
        world.overload(host)


# -- case 1: a drained host is powered on by relief and by the capacity watch -------------

ACTORS: dict[str, Callable[[World], object]] = {
    "relief": lambda world: world.relieve("c1"),              # plan --relieve + apply
    "capacity watch": lambda world: world.capacity_watch(),
    "daemon --once": lambda world: world.daemon_once(),       # auto_apply
}


@pytest.mark.parametrize("actor", list(ACTORS))
def test_a_drained_host_is_not_powered_on(world: World, actor: str) -> None:
    """Issue 33 case 1 (relief, the capacity watch, daemon --once); invariant
    protected_host_touched."""
    drained = world.drain("c3", power_off=True)
    assert drained.code == 0, drained.out + drained.err
    step(world)
    overload_all(world)
    ACTORS[actor](world)
    settled(world)


# -- case 2: kill -9 during a graceful shutdown, then rollback ---------------------------

def test_rollback_after_kill_during_graceful_shutdown_leaves_no_off_host_with_servers(
        world: World) -> None:
    """Issue 33 case 2; invariant off_host_holds_server."""
    assert world.cloud.bmcs is not None
    world.slow_shutdowns(10.0)                   # the shutdown outlasts the 2 s lease
    plan = world.plan()
    assert plan is not None
    world.apply_in_background(plan)
    wait_for("a graceful shutdown under way",
             lambda: world.cloud.bmcs.power.shutting_down())          # type: ignore
    assert world.kill9()
    time.sleep(LEASE_TTL + 0.5)                   # the killed apply's lease expires
    world.rollback(0)
    settled(world)


# -- case 3: a paused apply sends its shutdown after losing the lease ---------------------

def test_apply_paused_past_its_lease_sends_no_shutdown_after_a_rollback(
        world: World) -> None:
    """Issue 33 case 3 (SIGSTOP inside a power-off, a rollback meanwhile, SIGCONT);
    invariants two_actors and off_host_holds_server."""
    plan = world.plan()
    assert plan is not None
    world.bmc_delay("c3", 1.5)       # the identity and power reads of c3 answer late
    proc = world.apply_in_background(plan)
    wait_for("the power-off of c3 begun", lambda: journal_has(world, "power_off", "c3"))
    proc.send_signal(signal.SIGSTOP)
    world.stopped.append(proc)
    world.paused_at = time.monotonic()
    time.sleep(LEASE_TTL + 0.5)
    world.clear_faults()
    world.rollback(0)
    step(world)
    world.resume_paused()
    settled(world)


def test_database_lock_during_a_shutdown_with_a_forced_migration(world: World) -> None:
    """Issue 33 case 3 (another writer holds the database past the lease during a
    graceful shutdown while an admin's forced migration lands); invariant
    off_host_holds_server."""
    assert world.cloud.bmcs is not None
    world.slow_shutdowns(3.0)
    plan = world.plan()
    assert plan is not None
    world.apply_in_background(plan)
    wait_for("a graceful shutdown under way",
             lambda: world.cloud.bmcs.power.shutting_down())          # type: ignore
    host = world.cloud.bmcs.power.shutting_down()[0]
    world.db_lock(35.0)                  # past SQLite's 30 s busy timeout
    world.admin_migrate("b0", host)
    settled(world)


# -- case 4: a BMC that accepts the shutdown and then stops answering ---------------------

def test_bmc_vanishing_after_accepting_a_shutdown(world: World) -> None:
    """Issue 33 case 4; invariant journal_unexplained (off and enabled, no reason)."""
    world.slow_shutdowns(5.0)
    world.bmc_vanish("c3")
    plan = world.plan()
    assert plan is not None
    world.apply(plan)
    step(world)
    world.clear_faults()
    settled(world)


# -- case 5: rollback and the operator's hold taken while it waits at its prompt ----------

def test_rollback_keeps_off_a_host_the_operator_held_at_its_prompt(world: World) -> None:
    """Issue 33 case 5; invariant protected_host_touched."""
    plan = world.plan()
    assert plan is not None
    assert world.apply_to_the_end(plan).code == 0
    step(world)
    off = sorted(h for h, rec in world.facts().hosts.items() if rec["power"] == "off")
    assert off, "the plan powered nothing off"
    world.rollback(0, at_prompt=lambda: world.operator_service(off[0], enable=False))
    settled(world)


# -- case 6: a slow webhook holds the executor lease --------------------------------------

def test_a_slow_webhook_does_not_hold_an_apply_against_sigterm(world: World) -> None:
    """Issue 33 case 6; the apply must end on SIGTERM while its webhook still trickles
    (before the fix it ignores the signal and holds the lease: rollback is refused)."""
    plan = world.plan()
    assert plan is not None
    assert world.approve(plan).code == 0        # its approval is heard at once
    world.slow_webhook(90.0)                    # plan.started trickles in for 90 s
    received = world.webhook.received
    proc = world.apply_in_background(plan)
    wait_for("the webhook called", lambda: world.webhook.received > received)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):     # still held by the webhook
        proc.wait(timeout=20)
    still_running = proc.poll() is None
    world.webhook.stopping = True
    assert not still_running, "apply ignored SIGTERM while its webhook trickled"
    settled(world)


# -- case 7: apply --resume of a plan the operator has since rolled back ------------------

def test_resume_does_not_rerun_a_plan_rolled_back_since(world: World) -> None:
    """Issue 33 case 7; invariant rollback_incomplete (the resume undoes the rollback)."""
    plan = world.plan()
    assert plan is not None
    world.slow_shutdowns(3.0)
    proc = world.apply_in_background(plan)
    wait_for("a migration done", lambda: any(
        r.action == "migrate" and r.state == "succeeded" for r in world.facts().journal))
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    world.clear_faults()
    assert world.rollback(0).code == 0
    settled(world)
    placed = world.facts().where()
    world.apply(plan, resume=True)
    settled(world)
    assert world.facts().where() == placed, "apply --resume re-ran a rolled-back plan"


# -- "wrong, not yet harmful" in issue 33 ----------------------------------------------

def test_rollback_leaves_a_pinned_server_the_admin_moved_where_it_is(world: World) -> None:
    """Issue 33, wrong not yet harmful 1; invariant pinned_moved."""
    assert world.admin_migrate("p0", "c4") == 202
    settled(world)
    world.rollback(0)
    settled(world)
    assert world.facts().where()["p0"] == "c4"


def test_the_usage_path_keeps_to_the_scope(world: World) -> None:
    """Issue 33, wrong not yet harmful 2 (c5 is in az east, the scope az west): the
    capacity watch, relief and the daemon must not power on c5, powered off by
    consolidator's hosts power; invariant protected_host_touched."""
    assert world.admin_migrate("f0", "c1") == 202
    settled(world)
    assert world.hosts_power("off", "c5").code == 0
    settled(world)
    overload_all(world)
    world.capacity_watch()
    step(world)
    world.relieve("c1")
    step(world)
    world.daemon_once()
    settled(world)


def test_drain_and_undrain_keep_the_operators_hold(world: World) -> None:
    """Issue 33, wrong not yet harmful 4 (draining a host the operator disabled replaces
    the operator's reason; undrain then enables it); invariant protected_host_touched."""
    assert world.operator_service("c4", enable=False) == 200
    step(world)
    world.drain("c4", power_off=False)
    step(world)
    world.undrain("c4")
    settled(world)
    assert world.facts().hosts["c4"]["disabled_reason"] == "DIMM errors: RMA, keep off"


# -- found by the randomized test (tests/functional/test_safety_fuzz.py, CI seed) ---------

def test_found_relief_after_two_drains_powers_on_the_drained_host(world: World) -> None:
    """Found by the CI profile (seed 33, example 2), as Hypothesis printed it: issue 33
    case 1 again; invariant protected_host_touched (c3 drained: powered on, enabled, given
    work by relief)."""
    world.drain("c3", power_off=True)
    step(world)
    world.slow_shutdowns(1.0)
    step(world)
    world.hosts_power("off", "c4")
    step(world)
    world.drain("c1", power_off=False)
    step(world)
    for host in ("c2", "c3", "c4"):
        world.overload(host)
    world.relieve("c1")
    settled(world)


def test_found_hosts_power_through_a_bmc_that_vanishes(world: World) -> None:
    """Found by the long run (tools/bench/safety_fuzz.py, seed 33, round 0), reduced by
    hand to its steps: issue 33 case 4 through 'hosts power'; invariant journal_unexplained
    twice: c6 goes off while the journal says its power_off failed, then 'hosts power on'
    (the BMC still silent) fails yet enables c6 while it is off."""
    assert world.admin_migrate("g0", "c1") == 202      # c6 is empty
    settled(world)
    world.bmc_vanish("c6")
    world.hosts_power("off", "c6")
    world.observe()
    world.hosts_power("on", "c6")
    world.observe()
    world.clear_faults()
    settled(world)


@pytest.mark.parametrize("power_off", [False, True])
def test_found_hosts_power_on_does_not_undo_a_drain(world: World, power_off: bool) -> None:
    """Found by the long run (seed 33, round 2, twice): 'hosts power on' of a drained host
    enables it and forgets the drain ('hosts undrain' then answers "not drained"), which
    later lets a rollback move work onto it; invariant protected_host_touched (drained,
    enabled). Powering it on is the operator's own ask; enabling it is undrain's job."""
    assert world.drain("c3", power_off=power_off).code == 0
    step(world)
    world.hosts_power("on", "c3")
    settled(world)


def test_found_rollback_leaves_a_drained_host_drained(world: World) -> None:
    """Found by the long run (seed 33, round 3), reduced by hand: a rollback to a snapshot
    older than a drain powers the drained host on, enables it and moves its servers back;
    invariant protected_host_touched (drained). Undoing a drain is undrain's job."""
    assert world.drain("c1", power_off=True).code == 0
    settled(world)
    world.rollback(0)
    settled(world)


def test_found_rollback_leaves_the_admins_move_off_an_excluded_host_alone(
        world: World) -> None:
    """Found by the same run: the admin moved g0 off c6 (excluded) after the snapshot; the
    rollback moves it back onto c6; invariant protected_host_touched (excluded, given g0).
    Rollback touches only what consolidator did."""
    assert world.admin_migrate("g0", "c3") == 202
    settled(world)
    world.rollback(0)
    settled(world)


@pytest.mark.parametrize("hold", ["drain", "operator"])
def test_found_hosts_power_off_keeps_a_drain_or_an_operators_hold(world: World,
                                                                   hold: str) -> None:
    """Found by the long run (tools/bench/safety_fuzz.py --jobs 2, seed 1033), reduced by
    hand: 'hosts power off' of a drained host (or one the operator disabled) replaced its
    reason with consolidator's own, so the drain (or the hold) was forgotten and relief
    powered the host on, enabled it and gave it work; invariant protected_host_touched."""
    if hold == "drain":
        assert world.drain("c4", power_off=True).code == 0
    else:
        assert world.admin_migrate("e0", "c3") == 202   # the operator empties c4 and holds it
        settled(world)
        assert world.operator_service("c4", enable=False) == 200
    step(world)
    assert world.hosts_power("off", "c4").code == 0
    step(world)
    overload_all(world)
    world.relieve("c1")
    settled(world)
    reason = world.facts().hosts["c4"]["disabled_reason"]
    assert reason.startswith("consolidator: drained by plan") if hold == "drain" else \
        reason == "DIMM errors: RMA, keep off"


def test_found_an_operator_enabling_a_drained_host_through_nova_ends_its_drain(
        world: World) -> None:
    """Found by the long run (tools/bench/safety_fuzz.py --jobs 2, seed 20261128), reduced
    by hand: after c4's drain the operator enabled it through Nova (``openstack compute
    service set --enable``), and a rollback to a snapshot older than the drain moved e0 back
    onto it; invariant protected_host_touched (drained, given e0). The gate reads the live
    service, so the operator's enable ends the drain as it ends a hold: Nova's scheduler
    places work there again, and so may the rollback. The world kept c4 drained."""
    assert world.drain("c4", power_off=False).code == 0
    step(world)
    assert world.facts().servers["e0"]["host"] != "c4"
    assert world.operator_service("c4", enable=True) == 200
    step(world)
    assert world.rollback(0).code == 0
    settled(world)
    assert world.facts().servers["e0"]["host"] == "c4"


def test_found_a_drained_host_whose_power_off_fails_stays_drained(world: World) -> None:
    """Found by the probes of issue 45 (seed 7, reduced by hand): c4's BMC refuses the
    power-off of 'hosts drain c4 --power-off'. The drain keeps c4 disabled (its reason
    stays), yet its state was recorded 'in service' and the summary said "enabled again";
    invariant recorded_state_mismatch. A drain whose power-off failed still holds the host
    (idle_disabled_host: disabled, on and empty, as the operator's drain wants it)."""
    world.bmc_refuse("c4")
    result = world.drain("c4", power_off=True)
    assert result.code == 1
    assert "enabled again" not in result.out
    step(world)
    rec = world.facts().hosts["c4"]
    assert (rec["power"], rec["status"], rec["servers"]) == ("on", "disabled", 0)
    assert rec["disabled_reason"].startswith("consolidator: drained by plan")
    assert "c4" in world.known.drained
    world.settle_as_operator()
    _none(world.check_settled())
    world.undrain("c4")
    settled(world)
    assert world.facts().hosts["c4"]["status"] == "enabled"


@pytest.mark.parametrize("power_off", [False, True])
def test_found_a_drain_that_could_not_empty_its_host_ends_drained(world: World,
                                                                   power_off: bool) -> None:
    """Found by the probes of issue 45, reduced by hand: the migration of e0 off c4 fails,
    so 'hosts drain c4' fails with c4 disabled for the drain and e0 still on it. The plan
    has ended (a failed plan is not resumed), yet c4 stayed recorded 'draining', a step
    under way, for ever; invariant recorded_state_mismatch. The drain still holds c4 (only
    undrain brings it back): it is recorded 'drained'."""
    world.migration_fault("fails", "e0")
    assert world.drain("c4", power_off=power_off).code == 1
    step(world)
    rec = world.facts().hosts["c4"]
    assert (rec["power"], rec["status"], rec["servers"]) == ("on", "disabled", 1)
    found = DRAIN_REASON.match(rec["disabled_reason"] or "")
    assert found is not None, rec
    world.settle_as_operator()
    _none(world.check_settled())
    recorded = {host: state for (_cloud, host), state in world.store.host_states().items()}
    # Under a heavy load the drain can lose its 2 s lease instead, and end interrupted: the
    # operator's 'apply --resume' of the drain then empties c4 and (with --power-off) powers
    # it off. Only the drain's own plan may.
    resumed_off = power_off and world.facts().hosts["c4"]["power"] == "off"
    if resumed_off:
        assert {r.plan_id for r in world.facts().journal if r.action == "power_off"
                and r.target == "c4" and r.state == "succeeded"} == {found.group(1)}
    assert recorded["c4"] == ("off" if resumed_off else "drained")


def test_found_a_power_on_its_bmc_refuses_leaves_the_host_recorded_off(world: World) -> None:
    """Found by the probes of issue 45 (seed 11, job 0): a plan powered c3 off; its BMC then
    refuses the rollback's power-on (HTTP 500). c3 stayed recorded 'powering on' while its
    BMC reads off, for ever; invariant recorded_state_mismatch. A power-on that failed with
    the BMC reading off leaves the host 'off'."""
    plan = world.plan()
    assert plan is not None
    assert world.apply_to_the_end(plan).code == 0
    assert world.facts().hosts["c3"]["power"] == "off"
    step(world)
    world.bmc_refuse("c3")
    assert world.rollback(0).code != 0
    step(world)
    assert world.facts().hosts["c3"]["power"] == "off"
    world.settle_as_operator()
    _none(world.check_settled())
    recorded = {host: state for (_cloud, host), state in world.store.host_states().items()}
    assert recorded["c3"] == "off"


def test_found_an_operators_hold_through_nova_is_theirs_to_record(world: World) -> None:
    """Found by the probes of issue 45 (seed 11, job 1): consolidator recorded c2 'in
    service'; the operator then held c2 through Nova (os-services, their own reason), out of
    consolidator's sight. recorded_state_mismatch blamed consolidator for the record, but
    the change is the operator's (and the gate reads the live service for a hold): the
    invariant leaves a settled record alone where the operator set the status themselves."""
    assert world.hosts_power("on", "c2").code == 0
    step(world)
    assert world.operator_service("c2", enable=False) == 200
    world.settle_as_operator()
    _none(world.check_settled())
    rec = world.facts().hosts["c2"]
    assert (rec["status"], rec["disabled_reason"]) == ("disabled", World.HOLD_REASON)


def test_found_an_apply_paused_past_its_lease_records_no_state(world: World) -> None:
    """Found by the probes of issue 45 (seed 11, job 0): an apply was paused (SIGSTOP)
    during its BMC pre-flight, past its lease; meanwhile another apply powered c4 off. Woken
    up, the stale apply recorded c4 'emptying' (the pre-flight's record took no lease check)
    over 'off', and nothing ever ended it; invariant recorded_state_mismatch. A process that
    lost the lease records no host state."""
    plan = world.plan()
    assert plan is not None
    world.bmc_delay("c4", 8.0)       # the pre-flight's reads of c4's BMC answer late
    proc = world.apply_in_background(plan)
    assert world.store is not None
    wait_for("the plan running", lambda: world.store.rows(      # type: ignore[union-attr]
        "SELECT status FROM plans WHERE id = :id", id=plan)[0][0] == "running")
    # Paused while it waits on c4's BMC, not inside a write to the store: a process stopped
    # with SQLite's write lock would stop every other command too.
    wait_for("the pre-flight waiting on c4's BMC", lambda: not any(
        r["type"] == "slow" and r["count"] == 4 for r in world.cloud.faults.rules()))
    proc.send_signal(signal.SIGSTOP)
    world.stopped.append(proc)
    world.paused_at = time.monotonic()
    time.sleep(LEASE_TTL + 0.5)
    world.clear_faults()
    assert not journal_has(world, "migrate", "e0")     # paused before its migrations
    other = world.plan()
    assert other is not None, f"the second plan was refused: {world.last_plan}"
    assert world.apply_to_the_end(other).code == 0
    assert world.facts().hosts["c4"]["power"] == "off"
    step(world)
    world.resume_paused()
    world.settle_as_operator()
    _none(world.check_settled())


_PAUSED_INSIDE_A_WRITE = """
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
conn.execute("BEGIN EXCLUSIVE")
os.kill(os.getpid(), signal.SIGSTOP)     # paused inside its write, as SIGSTOP may land
conn.execute("ROLLBACK")
"""


def test_found_an_actor_paused_inside_a_write_does_not_stall_the_watch(
        world: World) -> None:
    """Found by CI (test_apply_paused_past_its_lease_sends_no_shutdown_after_a_rollback):
    the apply was paused while it held SQLite's lock, inside a commit. The watch's read of
    the journal waited on that lock for its 60 s and failed, and the test with it: only the
    test resumes the actor, later. A read that finds the store locked while an actor is
    paused resumes it (once past the lease, as the test would) and reads again."""
    proc = subprocess.Popen([sys.executable, "-c", _PAUSED_INSIDE_A_WRITE, str(world.db)])
    wait_for("the writer paused with the lock", lambda: stopped(proc.pid))
    world.stopped.append(proc)
    world.paused_at = time.monotonic()
    try:
        step(world)
        assert proc.wait(timeout=60) == 0
        assert not world.stopped
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGCONT)
        proc.wait(timeout=60)


def test_found_hosts_power_on_of_a_drained_host_records_it_drained(world: World) -> None:
    """Found by the probes of issue 45 (seed 23): the operator powers on a host their drain
    powered off; it comes up and stays disabled (undrain's job), but stayed recorded
    'powering on' for ever; invariant recorded_state_mismatch. It is recorded 'drained'."""
    assert world.drain("c3", power_off=True).code == 0
    step(world)
    assert world.hosts_power("on", "c3").code == 0
    step(world)
    rec = world.facts().hosts["c3"]
    assert (rec["power"], rec["status"]) == ("on", "disabled")
    world.settle_as_operator()
    _none(world.check_settled())
    recorded = {host: state for (_cloud, host), state in world.store.host_states().items()}
    assert recorded["c3"] == "drained"


def test_found_an_older_plan_applied_after_a_newer_one_records_no_off_host_emptying(
        world: World) -> None:
    """Found by the probes of issue 45 (seed 1023): an apply of plan A waited (paused)
    while a newer plan B emptied and powered off c3 and c4; A then ran, and its pre-flight
    recorded c3 and c4 'emptying' over 'off', for ever; invariant recorded_state_mismatch.
    Here A was approved before B was made (so B does not supersede it). A host whose BMC
    reads off is not being emptied: it stays 'off'."""
    older = world.plan()
    assert older is not None
    assert world.approve(older).code == 0
    newer = world.plan()
    assert newer is not None
    assert world.apply_to_the_end(newer).code == 0
    assert {world.facts().hosts[h]["power"] for h in ("c3", "c4")} == {"off"}
    step(world)
    world.apply(older)
    step(world)
    world.settle_as_operator()
    _none(world.check_settled())


def test_found_a_plan_made_before_a_drain_leaves_the_drained_host_recorded_drained(
        world: World) -> None:
    """Found by the long run of issue 45 (PostgreSQL, seed 9202, job 1, steps 3-37): a plan
    made before the operator's 'hosts drain c4' was approved and applied after it. Its
    pre-flight recorded the drained c4 'emptying'; c4's power-off did not happen, so c4
    stayed on, disabled by the drain and recorded 'emptying' for ever; invariant
    recorded_state_mismatch. A host a drain or the operator holds keeps its record."""
    plan = world.plan()
    assert plan is not None
    assert world.approve(plan).code == 0     # approved: the drain does not supersede it
    assert world.drain("c4", power_off=False).code == 0
    step(world)
    world.bmc_refuse("c4")          # c4's power-off fails: the plan leaves it on
    world.apply(plan)
    step(world)
    world.settle_as_operator()
    _none(world.check_settled())


def test_found_a_plan_made_before_a_drain_does_not_power_the_drained_host_off(
        world: World) -> None:
    """Found by the PostgreSQL long run of issue 45 (seed 16402, job 1, teardown of the
    example from 08:37:22): a plan was made and approved before the operator's 'hosts drain
    c3' (no power-off), and its apply, paused until then, ran after it. The gate let the plan
    power the drained c3 off (only enabling it, powering it on and giving it work were
    refused); invariant protected_host_disabled. A drain holds its host as the operator left
    it: only the drain itself (or the operator's own power command) powers it off."""
    first = world.plan()
    assert first is not None and world.store is not None
    drained = _first_to_power_off(world, first)
    for name, server in sorted(world.facts().servers.items()):   # the plan moves nothing
        if server["host"] == drained:
            assert world.delete_server(name)
    plan = world.plan()
    assert plan is not None and _first_to_power_off(world, plan) == drained
    assert world.approve(plan).code == 0     # approved: the drain does not supersede it
    assert world.drain(drained, power_off=False).code == 0
    step(world)
    result = world.apply(plan)
    step(world)
    rec = world.facts().hosts[drained]
    assert (rec["power"], rec["status"]) == ("on", "disabled"), (rec, result.out)
    assert DRAIN_REASON.match(rec["disabled_reason"] or "") is not None, rec
    assert f"{drained} is drained" in result.out, result.out
    world.settle_as_operator()
    _none(world.check_settled())


def test_found_a_drain_under_one_name_supersedes_the_plans_made_under_another(
        world: World) -> None:
    """Found by the same long run: the plan was made under 'fake2', the drain under 'fake';
    the drain superseded the proposed plans of 'fake' only, so the plan made before it could
    still be approved and applied. Plans are superseded by the cloud's identity."""
    world.alias = "fake2"
    plan = world.plan()
    assert plan is not None
    world.alias = "fake"
    assert world.drain("c4", power_off=False).code == 0
    world.alias = "fake2"
    refused = world.approve(plan)
    assert refused.code == 2 and "superseded" in refused.err, refused
    world.alias = "fake"
    newer = world.plan()
    assert newer is not None
    world.alias = "fake2"
    other = world.plan()
    assert other is not None
    assert world.approve(other).code == 0     # approving one supersedes the other name's
    world.alias = "fake"
    assert world.approve(newer).code == 2


def _apply_with_slow_migrations(world: World, plan: str, seconds: float
                                ) -> subprocess.Popen[bytes]:
    """apply PLAN in the background, each migration taking `seconds`; once one is under
    way."""
    for name in sorted(world.facts().servers):
        world.cloud.add_fault({"type": "migration_slow", "instance": name, "seconds": seconds,
                               "count": 1})
    proc = world.apply_in_background(plan)
    wait_for("a migration under way", lambda: any(
        world.migrating_to(h) for h in world.facts().hosts), timeout=120)
    return proc


def test_found_a_drain_during_a_killed_applys_migration_onto_its_host_is_their_race(
        world: World) -> None:
    """Found by the long run of issue 45 (SQLite, seed 9101, job 1, steps 5-21): an apply
    was killed (kill -9) while its migrations ran; the operator then drained one of their
    destinations, and the migrations, started while it was enabled, landed on it during the
    drain. The end-of-step check blamed consolidator (protected_host_touched: 'c1 (drained)
    was given d0, e0'): work counts as given to a host protected since before the step. The
    drained host is held, on, with what landed on it, and nothing is lost."""
    plan = world.plan()
    assert plan is not None
    proc = _apply_with_slow_migrations(world, plan, 6.0)
    dest = next(h for h in sorted(world.facts().hosts) if world.migrating_to(h))
    proc.kill()
    proc.wait()
    time.sleep(LEASE_TTL + 0.5)                   # the killed apply's lease expires
    step(world)
    world.drain(dest, power_off=False)
    step(world)
    world.settle_as_operator()
    _none(world.check_settled())


def test_found_an_operators_paused_drain_powers_off_for_them_later(world: World) -> None:
    """Found by the long run of issue 45 (seed 4545, step 36): the operator's 'hosts drain
    c1 --power-off' was paused as it started; their second drain of c1 (without power-off)
    finished; woken up, the first drained c1 again and powered it off. protected_host_disabled
    blamed consolidator for powering off a drained host, but it was the operator's own
    command, late: a drain of theirs still running acts for them until it ends."""
    proc = world.drain_in_background("c1")
    proc.send_signal(signal.SIGSTOP)
    world.stopped.append(proc)
    world.paused_at = time.monotonic()
    step(world)
    assert world.drain("c1", power_off=False).code == 0
    step(world)
    world.resume_paused()
    settled(world)
    world.settle_as_operator()
    _none(world.check_settled())


def test_found_an_operators_enable_before_their_paused_drain_starts_is_not_its_end(
        world: World) -> None:
    """Found by the long run of issue 45 (PostgreSQL, seed 9602, job 0, steps 5-10): the
    operator's 'hosts drain c4 --power-off' was paused as it started; they then enabled c4
    through Nova, which the harness took for the end of the drain; woken up, the drain
    disabled c4 and emptied it, and (the power-off failing) left it disabled, on and empty.
    idle_disabled_host blamed consolidator, but the operator's drain, late, holds c4: an
    enable ends a drain only once no drain of that host is still running."""
    proc = world.drain_in_background("c4")
    proc.send_signal(signal.SIGSTOP)
    world.stopped.append(proc)
    world.paused_at = time.monotonic()
    step(world)
    assert world.operator_service("c4", enable=True) == 200
    step(world)
    world.cloud.add_fault({"type": "http_error", "status": 500, "method": "POST",
                           "path": "/redfish/v1/Systems/c4/Actions/*", "count": 50})
    world.resume_paused()
    settled(world)
    rec = world.facts().hosts["c4"]
    assert (rec["power"], rec["status"], rec["servers"]) == ("on", "disabled", 0), rec
    assert DRAIN_REASON.match(rec["disabled_reason"] or "") is not None, rec
    world.settle_as_operator()
    _none(world.check_settled())


def _first_to_power_off(world: World, plan: str) -> str:
    """The first host (by name) the plan powers off."""
    assert world.store is not None
    return min(h for (h,) in world.store.rows(
        "SELECT host FROM plan_power_actions WHERE plan_id = :id AND action = 'off'",
        id=plan))


def _kill_then_overtake(world: World, proc: subprocess.Popen[bytes]) -> None:
    """kill -9 the apply, let its lease expire, then make a newer plan, which overtakes it
    (neither the daemon nor 'apply --resume' resumes it then)."""
    proc.kill()
    proc.wait()
    time.sleep(LEASE_TTL + 0.5)
    step(world)
    assert world.plan() is not None
    step(world)


def _emptied_then_killed(world: World) -> str:
    """An apply disables and empties the first host its plan powers off, is killed (kill -9)
    before that power-off, and is overtaken by a newer plan; that host."""
    plan = world.plan()
    assert plan is not None and world.store is not None
    host = _first_to_power_off(world, plan)
    proc = _apply_with_slow_migrations(world, plan, 2.0)
    world.bmc_delay(host, 5.0)          # its power-off waits on its BMC: the kill lands there
    wait_for(f"{host} emptied", lambda: (lambda rec: rec["status"] == "disabled"
                                          and rec["servers"] == 0 and rec["power"] == "on")(
        world.facts().hosts[host]), timeout=120)
    _kill_then_overtake(world, proc)
    return host


def test_found_a_killed_applys_emptied_host_is_not_left_disabled_once_overtaken(
        world: World) -> None:
    """Found by the SQLite long run of issue 45 (seed 9501, job 0, steps 5-34): an apply
    disabled c4 and emptied it, and was killed (kill -9) before its power-off. A newer plan
    overtook it, so its resume was refused, and no actor ever took c4 back: it stayed
    disabled ('emptied by plan ... for power-off'), on, empty and recorded 'emptying';
    invariants idle_disabled_host and recorded_state_mismatch."""
    _emptied_then_killed(world)
    world.settle_as_operator()
    _none(world.check_settled())


def test_found_an_operators_hold_on_a_killed_applys_emptied_host_is_recorded(
        world: World) -> None:
    """Found by the PostgreSQL long run of issue 45 (seed 12402, job 0, steps 1-28): as
    above, an apply disabled and emptied c3 and was killed before its power-off, and a newer
    plan overtook it; but the operator held c3 through Nova (their own reason) before the
    daemon put it back. The daemon rightly leaves an operator's hold alone, and c3 stayed
    recorded 'emptying' for ever, by a plan that no longer runs; invariant
    recorded_state_mismatch. The record follows the cloud: held by the operator."""
    host = _emptied_then_killed(world)
    assert world.operator_service(host, enable=False) == 200
    world.settle_as_operator()
    _none(world.check_settled())
    recorded = {h: state for (_cloud, h), state in world.store.host_states().items()}
    assert recorded[host] == "held by the operator"


def test_a_killed_applys_host_whose_shutdown_is_pending_is_not_put_back(
        world: World) -> None:
    """The other side of the case above: the apply was killed after it asked c3's BMC for
    a graceful shutdown that takes longer than power_timeout. c3 is disabled with the
    emptying reason, its plan is overtaken, and its BMC still reads on: the shutdown is
    pending, so the daemon does not put it back in service (nor make a plan for it each
    cycle), and once the BMC reads off it is recorded off."""
    world.slow_shutdowns(world.power_timeout + 20.0)
    plan = world.plan()
    assert plan is not None and world.store is not None
    host = _first_to_power_off(world, plan)
    proc = world.apply_in_background(plan)
    assert world.cloud.bmcs is not None
    wait_for(f"{host}'s shutdown", lambda: host in world.cloud.bmcs.power.shutting_down(),
             timeout=180)
    _kill_then_overtake(world, proc)
    mark = max((r.id for r in world.facts().journal), default=0)
    assert world.daemon_once().code == 0
    step(world)
    # a put-back would have asked the gate, which refuses a host whose shutdown is pending
    assert not [r for r in world.facts().journal if r.id > mark and r.target == host
                and r.action in ("power_on", "enable") and r.state == "skipped"], \
        "the daemon tried to put back a host whose shutdown is pending"
    world.settle_as_operator()
    _none(world.check_settled())
    assert world.facts().hosts[host]["power"] == "off"


def test_found_a_shutdown_whose_bmc_vanished_is_confirmed_off_once_it_answers(
        world: World) -> None:
    """Found by the long run of issue 45 (--store postgresql, job seed 5546, steps 30-40),
    reduced by hand: c3's BMC accepts the plan's power-off, then stops answering; the apply
    ends with c3 'powering off' (rightly: it may be going down). Once the BMC answers again
    it reads off, yet no actor (daemon --once included) recorded it 'off': it stayed
    'powering off' for ever; invariant recorded_state_mismatch. Each daemon cycle now asks
    the BMC of a host recorded 'powering off' (app/pending_shutdowns.py)."""
    plan = world.plan()
    assert plan is not None
    world.bmc_vanish("c3")
    assert world.apply(plan).code != 0
    step(world)
    world.settle_as_operator()          # the fault ends: the BMC answers, and reads off
    assert world.facts().hosts["c3"]["power"] == "off"
    _none(world.check_settled())


def test_found_an_operators_undrain_ends_their_power_off_hold(world: World) -> None:
    """Found by the long run of issue 45 (--store postgresql, job seed 5546, steps 19-31):
    the operator drained c1, powered it off with 'hosts power off --force' (their hold),
    then put it back in service with 'hosts undrain c1' (powered on and enabled); a later
    daemon cycle emptied c1 and powered it off, and the world still counted c1 as the
    operator's hold (protected_host_disabled). The operator's own undrain ends their hold:
    the host is the daemon's to pack again. (Here on c4.)"""
    assert world.drain("c4", power_off=False).code == 0     # drained and empty
    step(world)
    assert world.hosts_power("off", "c4").code == 0
    step(world)
    assert world.undrain("c4").code == 0
    step(world)
    assert world.facts().hosts["c4"]["power"] == "on"
    world.daemon_once()
    assert world.facts().hosts["c4"]["power"] == "off"       # packed again, as it may be
    settled(world)
    world.settle_as_operator()
    _none(world.check_settled())


def test_found_a_drain_paused_past_its_lease_then_overtaken_ends_drained(
        world: World) -> None:
    """Found by the PostgreSQL long run of issue 45 (seed 15402, job 1): the operator's
    'hosts drain c1 --power-off' disabled c1 and was paused (SIGSTOP) past its lease while
    other plans were made and applied. Woken up, it found its lease lost and ended
    interrupted; its resume was then refused, and c1 stayed recorded 'draining', a step
    under way, for ever; invariant recorded_state_mismatch. The drain still holds c1 (only
    undrain brings it back): it is recorded 'drained'."""
    proc = world.drain_in_background("c1")
    assert world.store is not None
    wait_for("c1 recorded draining", lambda: ("draining",) in world.store.rows(  # type: ignore
        "SELECT state FROM host_states WHERE host = 'c1'"), timeout=120)
    proc.send_signal(signal.SIGSTOP)
    world.stopped.append(proc)
    world.paused_at = time.monotonic()
    time.sleep(LEASE_TTL + 0.5)
    step(world)
    plan = world.plan()          # a newer plan, applied: it overtakes the drain, and the
    assert plan is not None      # lease changes hands
    assert world.apply(plan).code in (0, 1)
    step(world)
    world.resume_paused()
    settled(world)
    world.settle_as_operator()
    _none(world.check_settled())
    rec = world.facts().hosts["c1"]
    assert rec["status"] == "disabled", rec
    recorded = {h: state for (_cloud, h), state in world.store.host_states().items()}
    assert recorded["c1"] in ("drained", "off"), recorded


def _recorded(world: World, host: str) -> str | None:
    """The state recorded for the host (under any name of the cloud), or None."""
    assert world.store is not None
    found = world.store.rows("SELECT state FROM host_states WHERE host = :host", host=host)
    return str(found[0][0]) if found else None


@pytest.mark.parametrize("alias", ["fake", "fake2"])
def test_found_a_killed_applys_target_recorded_emptying_while_enabled_is_put_back(
        world: World, alias: str) -> None:
    """Found by the SQLite long run of issue 45 (seed 22301, job 0, around step 20): an apply
    recorded the hosts it powers off 'emptying' in its pre-flight, then was killed (kill -9)
    before it disabled any of them (a host is disabled at its own power-off step), and a
    newer plan overtook it. The first host stayed on, enabled and in use, yet recorded
    'emptying' for ever, by a plan that no longer runs; invariant recorded_state_mismatch.
    Under either clouds.yaml name of the cloud, the record follows the cloud: in service."""
    world.alias = alias
    plan = world.plan()
    assert plan is not None
    host = _first_to_power_off(world, plan)
    proc = _apply_with_slow_migrations(world, plan, 3.0)
    wait_for(f"{host} recorded emptying", lambda: _recorded(world, host) == "emptying",
             timeout=120)
    proc.kill()
    proc.wait()
    assert world.facts().hosts[host]["status"] == "enabled"     # killed before its disable
    world.settle()
    time.sleep(LEASE_TTL + 0.5)
    step(world)
    assert world.plan() is not None                              # overtakes it
    step(world)
    assert world.daemon_once().code == 0
    step(world)
    # its first step ends the dead plan's record, before its own plan may empty the host
    # again (a plan's pre-flight finds it 'emptying' already and leaves the record as is)
    assert world.store is not None
    assert (host, "emptying", "in service") in world.store.rows(
        "SELECT host, before, after FROM host_state_changes WHERE host = :host",
        host=host), world.store.rows("SELECT * FROM host_state_changes")
    world.settle_as_operator()
    _none(world.check_settled())


def test_found_a_drain_killed_under_another_name_is_recorded_drained(world: World) -> None:
    """Found by the SQLite long run of issue 45 (seed 22302, job 1, step 35): the operator's
    'hosts drain c3 --power-off', run under the cloud's second clouds.yaml name, disabled c3
    and was killed (kill -9) 3 s in. Its plan stayed 'running' (no daemon under the first
    name looks at it, and 'apply --resume' under that name refuses it), so c3 stayed
    recorded 'draining' for ever; invariant recorded_state_mismatch. A plan whose cloud's
    executor lease nobody holds is not running, whatever its status says: c3 is recorded
    'drained' (the drain holds it until undrain)."""
    world.alias = "fake2"
    proc = world.drain_in_background("c3")
    wait_for("c3 recorded draining", lambda: _recorded(world, "c3") == "draining",
             timeout=120)
    wait_for("c3 disabled", lambda: world.facts().hosts["c3"]["status"] == "disabled",
             timeout=120)
    proc.kill()
    proc.wait()
    world.settle()
    time.sleep(LEASE_TTL + 0.5)
    step(world)
    world.settle_as_operator()
    _none(world.check_settled())
    assert _recorded(world, "c3") in ("drained", "off")


def test_found_settling_right_after_a_kill_waits_out_the_killed_applys_lease(
        world: World) -> None:
    """Found by the PostgreSQL long run of issue 45 (seed 24402, job 0, example end after
    step 39): an apply asked c3's BMC for its shutdown, the BMC then stopped answering, and
    the apply was killed (kill -9). The example ended at once: its operator cleared the
    faults and ran 'apply --resume' and 'daemon --once' while the killed apply's lease had
    not yet expired, so both were refused (rightly: the lease is held until it expires),
    and c3 was judged still recorded 'powering off' though its BMC read off
    (recorded_state_mismatch). An operator settling the world waits out a dead holder's
    lease first; the daemon then records c3 off."""
    world.bmc_vanish("c3")
    plan = world.plan()
    assert plan is not None
    proc = world.apply_in_background(plan)
    wait_for("c3 recorded powering off", lambda: _recorded(world, "c3") == "powering off",
             timeout=120)
    proc.kill()
    proc.wait()
    world.settle_as_operator()
    _none(world.check_settled())
    assert world.facts().hosts["c3"]["power"] == "off"
